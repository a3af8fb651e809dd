CREATE TABLE processed_messages(
  event_id text PRIMARY KEY,
  processed_at timestamptz NOT NULL DEFAULT now()
);
-- Written in the consumer's transaction, with its effect: what the relay must pass on.
CREATE TABLE outbox(
  id bigserial PRIMARY KEY,
  event_id text NOT NULL,
  amount bigint NOT NULL,
  sent_at timestamptz
);
-- The relay's external effect, one row per outbox row however often the relay runs it.
CREATE TABLE relay_effects(
  outbox_id bigint PRIMARY KEY,
  event_id text NOT NULL,
  amount bigint NOT NULL
);
