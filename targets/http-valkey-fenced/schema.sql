-- http-valkey-fenced's stored answers: a row per executed request, written in the order's transaction, as
-- http-valkey-lock's; and each key's fencing token, the largest lock token that entered a transaction.
CREATE TABLE idempotency_keys(
  id bigserial PRIMARY KEY,
  key text NOT NULL,
  request_hash text NOT NULL,
  status int,
  location text,
  body text
);
CREATE INDEX ON idempotency_keys(key);
CREATE TABLE key_fences(key text PRIMARY KEY, fence bigint NOT NULL);
