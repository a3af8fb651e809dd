CREATE TABLE processed_messages(
  event_id text PRIMARY KEY,
  processed_at timestamptz NOT NULL DEFAULT now()
);
-- One dead letter per event, whatever the redeliveries: the scenario's dead_letters has no key of its own.
CREATE UNIQUE INDEX dead_letters_event ON dead_letters(event_id);
