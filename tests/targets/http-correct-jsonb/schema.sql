-- targets/http-correct's key table with the stored answer in a jsonb column: PostgreSQL keeps a jsonb
-- value as a tree, and prints it back with its keys in its own order and a space after each colon and
-- comma, so a replay is the first answer as JSON, in other bytes.
CREATE TABLE idempotency_keys(
  key text PRIMARY KEY,
  request_hash text NOT NULL,
  status int,
  location text,
  body jsonb,
  created_at timestamptz NOT NULL DEFAULT now()
);
