-- http-key-outside-tx's keys: claimed 'in_progress' in a transaction of their own, marked 'completed'
-- with the answer in a later one. Nothing expires an 'in_progress' row (no lease): that is the bug.
CREATE TABLE idempotency_keys(
  key text PRIMARY KEY,
  request_hash text NOT NULL,
  state text NOT NULL,
  status int,
  location text,
  body text,
  created_at timestamptz NOT NULL DEFAULT now()
);
