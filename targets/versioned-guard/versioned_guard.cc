// versioned-guard (customer-city): a version guard in the UPDATE itself. For each entry it runs, in
// autocommit (no BEGIN/COMMIT: the single statement is its own transaction), UPDATE customers SET
// city = $1, version = $2 WHERE id = $3 AND version < $2, then XACKs. It is correct: an older or repeated
// version changes nothing, so duplicates, redeliveries and out-of-order versions all leave the row at the
// highest version's city. The statement is prepared once at start and run with exec_prepared.
#include "consumer.h"

#include <pqxx/pqxx>

using namespace idem::targets;

int main() {
  return consumerMain("versioned-guard", [] {
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    db.prepare("set_city", "UPDATE customers SET city = $1, version = $2 WHERE id = $3 AND version < $2");
    db.prepare_now("set_city");
    runConsumer(valkey, config, [&](const Entry& e) {
      pqxx::nontransaction tx(db);
      tx.exec_prepared("set_city", e.field("city"), std::to_string(integerField(e, "version")),
                       e.field("customer"));
      return Outcome::Ack;
    });
  });
}
