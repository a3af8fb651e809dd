// versioned-naive (customer-city): last write wins. For each entry it runs, in autocommit, UPDATE
// customers SET city = <city>, version = <version> WHERE id = <customer>, then XACKs. It is NOT correct:
// when versions arrive out of order (or an old version is redelivered after a newer one) the row ends at
// an older city. Plain text statements (simple query protocol, values validated/quoted by the consumer).
#include "consumer.h"

#include <pqxx/pqxx>

using namespace idem::targets;

int main() {
  return consumerMain("versioned-naive", [] {
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    runConsumer(valkey, config, [&](const Entry& e) {
      pqxx::nontransaction tx(db);
      tx.exec("UPDATE customers SET city = " + tx.quote(e.field("city")) +
              ", version = " + std::to_string(integerField(e, "version")) +
              " WHERE id = " + tx.quote(e.field("customer")));
      return Outcome::Ack;
    });
  });
}
