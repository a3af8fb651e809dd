CREATE TABLE processed_messages(
  event_id text PRIMARY KEY,
  processed_at timestamptz NOT NULL DEFAULT now()
);
