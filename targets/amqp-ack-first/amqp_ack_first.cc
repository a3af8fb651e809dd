// amqp-ack-first (wallet, RabbitMQ): manual acks, one message at a time; for each delivery it first
// acknowledges it (basic.ack), then BEGIN; UPDATE wallets SET balance_halala = balance_halala + <amount>
// WHERE id = <wallet>; COMMIT. It is NOT correct: a kill between the ack and the COMMIT loses the event
// (the broker has forgotten the message, the effect never happened), and a producer retry is applied twice.
#include "amqp_consumer.h"

#include <pqxx/pqxx>

using namespace idem::targets;

int main() {
  return consumerMain("amqp-ack-first", [] {
    const AmqpConfig config = amqpConfigFromEnv();
    pqxx::connection db(config.databaseUrl);
    AmqpConsumer consumer(config);
    runAmqpConsumer(consumer, [&](const AmqpMessage& m) {
      consumer.ack(m);
      pqxx::work tx(db);
      tx.exec("UPDATE wallets SET balance_halala = balance_halala + " + std::to_string(integerField(m.entry, "amount")) +
              " WHERE id = " + tx.quote(m.entry.field("wallet")));
      tx.commit();
    });
  });
}
