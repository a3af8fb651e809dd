// nats-no-dedup (wallet, NATS JetStream): for each message BEGIN; UPDATE wallets SET balance_halala =
// balance_halala + <amount> WHERE id = <wallet>; COMMIT; then +ACK (synchronously). Nothing is lost, but it
// has no dedup, so it is NOT correct: a message redelivered after a kill between its COMMIT and its ACK
// (AckWait passes, JetStream delivers it again) is applied twice, and so is a producer retry.
#include "nats.h"

#include <pqxx/pqxx>

#include <iostream>

using namespace idem::targets;

int main() {
  return consumerMain("nats-no-dedup", [] {
    const NatsConfig config = natsConfigFromEnv();
    pqxx::connection db(config.databaseUrl);
    NatsConsumer consumer(config);
    consumer.run([&](const NatsMessage& m) {
      pqxx::work tx(db);
      tx.exec("UPDATE wallets SET balance_halala = balance_halala + " + std::to_string(integerField(m.entry, "amount")) +
              " WHERE id = " + tx.quote(m.entry.field("wallet")));
      tx.commit();
      if (const std::string err = consumer.ack(m); !err.empty())
        std::cerr << "nats-no-dedup: ack of " << m.entry.id << ": " << err << std::endl;
    });
  });
}
