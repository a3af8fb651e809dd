-- py-check-then-act's record of the events it applied, as targets/check-then-act/schema.sql: on purpose
-- WITHOUT a unique key (no PRIMARY KEY, no UNIQUE, no index) on event_id. py-dedup-table's processed_messages
-- is this table with event_id as its PRIMARY KEY.
CREATE TABLE seen_events(
  event_id text NOT NULL,
  seen_at timestamptz NOT NULL DEFAULT now()
);
