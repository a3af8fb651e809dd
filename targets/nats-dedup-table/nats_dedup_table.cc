// nats-dedup-table (wallet, NATS JetStream): the inbox/dedup-table pattern. In one transaction it inserts
// the message's event_id into processed_messages (ON CONFLICT DO NOTHING) and credits the wallet only if
// the row was inserted; after COMMIT it sends +ACK (synchronously). It is correct: the record of the event
// and its effect commit together, so a producer retry or a redelivery (after a kill anywhere, after
// AckWait, after the durable forgot its acks) is never applied twice, and a message is acknowledged only
// once its effect is durable, so nothing is lost.
#include "nats.h"
#include "wallet_dedup.h"

#include <iostream>

using namespace idem::targets;

int main() {
  return consumerMain("nats-dedup-table", [] {
    const NatsConfig config = natsConfigFromEnv();
    pqxx::connection db(config.databaseUrl);
    prepareWalletDedup(db);
    NatsConsumer consumer(config);
    consumer.run([&](const NatsMessage& m) {
      applyWalletOnce(db, m.entry);
      if (const std::string err = consumer.ack(m); !err.empty())
        std::cerr << "nats-dedup-table: ack of " << m.entry.id << ": " << err << std::endl;
    });
  });
}
