-- zombie-no-fence's record of the events it applied. On purpose WITHOUT a unique key (no PRIMARY KEY, no
-- UNIQUE, no index) on event_id: a consumer that woke from a pause and one that claimed its entry meanwhile
-- can both insert the same event_id. dedup-table's processed_messages is this table with event_id as its
-- PRIMARY KEY.
CREATE TABLE applied_events(
  event_id text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);
