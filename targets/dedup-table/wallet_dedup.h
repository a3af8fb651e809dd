#pragma once
/// The dedup-table strategy for the wallet scenario, shared by targets/dedup-table and the consumers that
/// vary it (targets/crash-on-40001, targets/no-reconnect, tests/targets/skip-no-ack, tests/targets/hostile).
#include "consumer.h"

#include <pqxx/pqxx>

namespace idem::targets {

/// Prepares the two statements on `db` now (two round trips, PostgreSQL steps "PARSE"), so that every
/// entry then costs the same round trips: "record_event" (INSERT INTO processed_messages(event_id) VALUES
/// ($1) ON CONFLICT DO NOTHING) and "credit_wallet" (UPDATE wallets ... + $1 WHERE id = $2).
void prepareWalletDedup(pqxx::connection& db);

/// In one transaction: records e's event_id in processed_messages (ON CONFLICT DO NOTHING) and, only if
/// it was new, credits e's amount to e's wallet. Returns true when the event was new (and applied).
/// Round trips: BEGIN, INSERT, [UPDATE], COMMIT.
bool applyWalletOnce(pqxx::connection& db, const Entry& e);

} // namespace idem::targets
