// poison-dlq (wallet-poison): dedup-table, and an event it can never apply (an amount that is not a
// positive integer, or a wallet without a row) is dead-lettered at its first delivery: in one transaction
// it inserts the event into $DEAD_LETTER_TABLE (ON CONFLICT DO NOTHING on its own unique index, so that a
// redelivery after a kill between that COMMIT and the XACK writes no second dead letter), then XACKs it.
// A poison event is not worth a retry: the same fields fail the same way every time. Correct, under kills.
#include "poison.h"

#include <cstdlib>
#include <stdexcept>

using namespace idem::targets;

int main() {
  return consumerMain("poison-dlq", [] {
    Config config = configFromEnv();
    const char* table = std::getenv("DEAD_LETTER_TABLE");
    if (table == nullptr || *table == '\0')
      throw std::runtime_error("DEAD_LETTER_TABLE is not set: this consumer dead-letters into a table");
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    preparePoison(db);
    db.prepare("dead_letter", std::string("INSERT INTO ") + table +
                                  "(event_id, reason) VALUES ($1, $2) ON CONFLICT (event_id) DO NOTHING");
    runConsumer(valkey, config, [&](const Entry& e) {
      std::string why = applyUnlessPoison(db, e);
      if (!why.empty()) {
        pqxx::work tx(db);
        tx.exec_prepared("dead_letter", e.field("event_id"), why);
        tx.commit();
      }
      return Outcome::Ack;
    });
  });
}
