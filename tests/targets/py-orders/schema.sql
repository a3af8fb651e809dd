-- py-orders' keys: the row is inserted first in the request's transaction (its unique index makes a
-- concurrent retry wait), and filled with the answer before COMMIT.
CREATE TABLE idempotency_keys(
  key text PRIMARY KEY,
  request_hash text NOT NULL,
  status int,
  location text,
  body text,
  created_at timestamptz NOT NULL DEFAULT now()
);
