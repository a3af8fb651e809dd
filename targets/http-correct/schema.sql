-- http-correct's keys: one row per executed request, written in the same transaction as the order, with
-- the canonical hash of its payload and the answer it got (replayed byte for byte). The PRIMARY KEY is a
-- second guard behind the advisory lock.
CREATE TABLE idempotency_keys(
  key text PRIMARY KEY,
  request_hash text NOT NULL,
  status int,
  location text,
  body text,
  created_at timestamptz NOT NULL DEFAULT now()
);
