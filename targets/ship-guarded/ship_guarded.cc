// ship-guarded (order-shipping): a state-transition guard. In one transaction it runs UPDATE orders SET
// status = 'shipped' WHERE id = $1 AND status = 'paid' and, only if that changed a row, UPDATE stock SET
// qty = qty - $qty WHERE sku = $1; COMMIT; then XACK. It is correct: the order's own status records that it
// was shipped, atomically with the stock change, so a duplicate or a redelivery decrements nothing more.
// The stock goes down by the event's qty.
// Statements are sent with exec_params (extended protocol, unnamed statements).
#include "consumer.h"

#include <pqxx/pqxx>

using namespace idem::targets;

int main() {
  return consumerMain("ship-guarded", [] {
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    runConsumer(valkey, config, [&](const Entry& e) {
      pqxx::work tx(db);
      auto shipped = tx.exec_params("UPDATE orders SET status = 'shipped' WHERE id = $1 AND status = 'paid'",
                                    std::to_string(integerField(e, "order")));
      if (shipped.affected_rows() == 1)
        tx.exec_params("UPDATE stock SET qty = qty - $1 WHERE sku = $2", integerField(e, "qty"), e.field("sku"));
      tx.commit();
      return Outcome::Ack;
    });
  });
}
