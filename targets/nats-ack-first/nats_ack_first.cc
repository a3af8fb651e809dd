// nats-ack-first (wallet, NATS JetStream): for each message, +ACK first (synchronously), then BEGIN;
// UPDATE wallets SET balance_halala = balance_halala + <amount> WHERE id = <wallet>; COMMIT. It is NOT
// correct: a kill between its ACK and its COMMIT loses the event (JetStream holds it acknowledged and never
// delivers it again), and with no dedup a producer retry is applied twice.
#include "nats.h"

#include <pqxx/pqxx>

#include <iostream>

using namespace idem::targets;

int main() {
  return consumerMain("nats-ack-first", [] {
    const NatsConfig config = natsConfigFromEnv();
    pqxx::connection db(config.databaseUrl);
    NatsConsumer consumer(config);
    consumer.run([&](const NatsMessage& m) {
      if (const std::string err = consumer.ack(m); !err.empty())
        std::cerr << "nats-ack-first: ack of " << m.entry.id << ": " << err << std::endl;
      pqxx::work tx(db);
      tx.exec("UPDATE wallets SET balance_halala = balance_halala + " + std::to_string(integerField(m.entry, "amount")) +
              " WHERE id = " + tx.quote(m.entry.field("wallet")));
      tx.commit();
    });
  });
}
