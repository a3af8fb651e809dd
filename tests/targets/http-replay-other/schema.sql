-- http-correct-jsonb's key table, with a trigger that stores another answer than the one the request got:
-- every replay then carries a member the first answer did not have (another JSON value, not only other
-- bytes).
CREATE TABLE idempotency_keys(
  key text PRIMARY KEY,
  request_hash text NOT NULL,
  status int,
  location text,
  body jsonb,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE FUNCTION stored_answer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.body := NEW.body || '{"replayed": true}'::jsonb;
  RETURN NEW;
END $$;
CREATE TRIGGER stored_answer BEFORE INSERT ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION stored_answer();
