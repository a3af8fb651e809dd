CREATE TABLE processed_messages(event_id text PRIMARY KEY);
