// ship-naive (order-shipping): ships without a guard. In one transaction it runs UPDATE orders SET
// status = 'shipped' WHERE id = <order> and UPDATE stock SET qty = qty - <qty> WHERE sku = <sku>; COMMIT; then
// XACK. It is NOT correct: a producer retry or a redelivery after a kill between COMMIT and XACK
// decrements the stock a second time for the same order. Plain text statements (simple query protocol,
// values validated/quoted by the consumer).
#include "consumer.h"

#include <pqxx/pqxx>

using namespace idem::targets;

int main() {
  return consumerMain("ship-naive", [] {
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    runConsumer(valkey, config, [&](const Entry& e) {
      pqxx::work tx(db);
      tx.exec("UPDATE orders SET status = 'shipped' WHERE id = " + std::to_string(integerField(e, "order")));
      tx.exec("UPDATE stock SET qty = qty - " + std::to_string(integerField(e, "qty")) + " WHERE sku = " +
              tx.quote(e.field("sku")));
      tx.commit();
      return Outcome::Ack;
    });
  });
}
