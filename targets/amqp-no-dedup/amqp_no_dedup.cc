// amqp-no-dedup (wallet, RabbitMQ): manual acks, one message at a time; for each delivery BEGIN; UPDATE
// wallets SET balance_halala = balance_halala + <amount> WHERE id = <wallet>; COMMIT; then basic.ack.
// Nothing is lost, but it has no dedup, so it is NOT correct: a producer retry (same event_id, new
// message) is applied twice, and so is a message redelivered after a kill between its COMMIT and its ack.
#include "amqp_consumer.h"

#include <pqxx/pqxx>

using namespace idem::targets;

int main() {
  return consumerMain("amqp-no-dedup", [] {
    const AmqpConfig config = amqpConfigFromEnv();
    pqxx::connection db(config.databaseUrl);
    AmqpConsumer consumer(config);
    runAmqpConsumer(consumer, [&](const AmqpMessage& m) {
      pqxx::work tx(db);
      tx.exec("UPDATE wallets SET balance_halala = balance_halala + " + std::to_string(integerField(m.entry, "amount")) +
              " WHERE id = " + tx.quote(m.entry.field("wallet")));
      tx.commit();
      consumer.ack(m);
    });
  });
}
