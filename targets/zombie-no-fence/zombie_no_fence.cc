// zombie-no-fence (wallet): a consumer that takes an entry as its own for as long as it works on it. In one
// READ COMMITTED transaction (libpqxx's pqxx::work) it first looks whether the event was applied —
// SELECT 1 FROM applied_events WHERE event_id = $1 — and if not, credits the wallet (UPDATE wallets …),
// records the event (INSERT INTO applied_events, NO unique key on event_id: schema.sql), COMMITs, then
// XACKs. A row found: COMMIT, XACK.
//
// Alone it is correct whatever the kill: the credit and the record commit together, so a kill before
// COMMIT leaves nothing, and a redelivery after COMMIT finds the committed row. Its flaw is that nothing
// fences a consumer that has lost the entry: paused past CLAIM_IDLE_MS (a GC pause, a stopped VM: the
// `pause` fault), its entry is claimed by another consumer, which looks, finds no committed row and credits
// too; when the paused one wakes it goes on as if the entry were still its own — a zombie — and the event
// is applied twice (`run --consumers 2 --crash pause:before:COMMIT#1`). Neither re-checks that it still
// owns the entry, and the database holds no key that would stop the second record. dedup-table is its
// fenced counterpart: INSERT … ON CONFLICT DO NOTHING on a primary key, where the second insert waits for
// the first transaction and then inserts nothing.
// Statements are sent with exec_params (extended protocol, unnamed statements).
#include "consumer.h"

#include <pqxx/pqxx>

using namespace idem::targets;

int main() {
  return consumerMain("zombie-no-fence", [] {
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    runConsumer(valkey, config, [&](const Entry& e) {
      const std::string& eventId = e.field("event_id");
      pqxx::work tx(db);
      if (tx.exec_params("SELECT 1 FROM applied_events WHERE event_id = $1", eventId).empty()) {
        tx.exec_params("UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2",
                       std::to_string(integerField(e, "amount")), e.field("wallet"));
        tx.exec_params("INSERT INTO applied_events (event_id) VALUES ($1)", eventId);
      }
      tx.commit(); // applied before: nothing written, the transaction ends all the same
      return Outcome::Ack;
    });
  });
}
