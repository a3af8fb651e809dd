-- http-no-hash's keys: http-correct's table. request_hash is written but never read (the bug).
CREATE TABLE idempotency_keys(
  key text PRIMARY KEY,
  request_hash text NOT NULL,
  status int,
  location text,
  body text,
  created_at timestamptz NOT NULL DEFAULT now()
);
