-- http-valkey-lock's stored answers: a row per executed request, written in the order's transaction. No
-- unique constraint on key: the lock in Valkey is what keeps a key's requests apart.
CREATE TABLE idempotency_keys(
  id bigserial PRIMARY KEY,
  key text NOT NULL,
  request_hash text NOT NULL,
  status int,
  location text,
  body text
);
CREATE INDEX ON idempotency_keys(key);
