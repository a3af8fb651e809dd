// dedup-table (wallet): the inbox/dedup-table pattern. In one transaction it inserts the entry's
// event_id into processed_messages (ON CONFLICT DO NOTHING) and credits the wallet only if the row was
// inserted; after COMMIT it XACKs the entry, duplicates included. It is correct: the record of the event
// and its effect commit together, so a producer retry or a redelivery after a kill (before COMMIT:
// nothing happened; after COMMIT, before XACK: the event is already recorded) is never applied twice.
// Statements are prepared once at start (libpqxx prepare_now) and executed with exec_prepared.
// WORK_MS (environment, default 0): milliseconds of work per entry before its transaction (an external
// call); SIGTERM during it leaves the entry pending.
#include "wallet_dedup.h"

using namespace idem::targets;

int main() {
  return consumerMain("dedup-table", [] {
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    prepareWalletDedup(db);
    const long long workMs = workMsFromEnv();
    runConsumer(valkey, config, [&](const Entry& e) {
      if (!workFor(workMs)) return Outcome::LeavePending;
      applyWalletOnce(db, e);
      return Outcome::Ack;
    });
  });
}
