CREATE TABLE processed_events(
  event_id text PRIMARY KEY,
  processed_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE outbox(
  id bigserial PRIMARY KEY,
  event_id text NOT NULL,
  body text NOT NULL,
  sent_at timestamptz
);
