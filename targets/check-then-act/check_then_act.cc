// check-then-act (wallet): deduplication by looking first. In one READ COMMITTED transaction (libpqxx's
// pqxx::work, PostgreSQL's default level) it runs SELECT 1 FROM seen_events WHERE event_id = $1; if a row
// is there the event was applied before: COMMIT, then XACK. Otherwise INSERT INTO seen_events (event_id)
// VALUES ($1), then UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2, COMMIT, XACK.
// seen_events has NO unique key on event_id (schema.sql).
//
// One consumer at a time it is correct, whatever the kill: the record and the credit commit together, so a
// kill before COMMIT leaves nothing and a redelivery after COMMIT finds the committed row. It is NOT
// correct with two consumers holding the same event at once (one claims what the other is still working
// on, or a retry reaches another replica): both SELECT before either commits, neither sees a row, both
// insert one (nothing unique stops the second) and both credit. Its correct counterpart is dedup-table:
// INSERT ... ON CONFLICT DO NOTHING on a primary key, where the second insert waits for the first
// transaction and then inserts nothing.
// Statements are sent with exec_params (extended protocol, unnamed statements).
#include "consumer.h"

#include <pqxx/pqxx>

using namespace idem::targets;

int main() {
  return consumerMain("check-then-act", [] {
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    runConsumer(valkey, config, [&](const Entry& e) {
      const std::string& eventId = e.field("event_id");
      pqxx::work tx(db);
      bool seen = !tx.exec_params("SELECT 1 FROM seen_events WHERE event_id = $1", eventId).empty();
      if (!seen) {
        tx.exec_params("INSERT INTO seen_events (event_id) VALUES ($1)", eventId);
        tx.exec_params("UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2",
                       std::to_string(integerField(e, "amount")), e.field("wallet"));
      }
      tx.commit(); // a duplicate: nothing written, the transaction ends all the same
      return Outcome::Ack;
    });
  });
}
