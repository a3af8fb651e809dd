-- http-check-then-insert's keys. On purpose WITHOUT a unique key (no PRIMARY KEY, no UNIQUE, no index)
-- on key: nothing in the database stops two transactions from both inserting the same key. http-correct's
-- idempotency_keys is this table with key as its PRIMARY KEY (and an advisory lock in front).
CREATE TABLE idempotency_keys(
  key text NOT NULL,
  request_hash text NOT NULL,
  status int,
  location text,
  body text,
  created_at timestamptz NOT NULL DEFAULT now()
);
