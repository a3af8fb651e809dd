// simple (wallet): the naive consumer. For each entry it runs BEGIN; UPDATE wallets SET balance_halala =
// balance_halala + <amount> WHERE id = <wallet>; COMMIT; then XACK. It has no idempotency at all, so it
// is NOT correct: a producer retry (same event_id) is applied twice, and a kill after COMMIT and before
// XACK makes the entry be redelivered and applied again. Statements are sent as plain text (simple
// query protocol, values validated/quoted by the consumer).
#include "consumer.h"

#include <pqxx/pqxx>

using namespace idem::targets;

int main() {
  return consumerMain("simple", [] {
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    runConsumer(valkey, config, [&](const Entry& e) {
      pqxx::work tx(db);
      tx.exec("UPDATE wallets SET balance_halala = balance_halala + " +
              std::to_string(integerField(e, "amount")) + " WHERE id = " + tx.quote(e.field("wallet")));
      tx.commit();
      return Outcome::Ack;
    });
  });
}
