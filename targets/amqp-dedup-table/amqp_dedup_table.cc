// amqp-dedup-table (wallet, RabbitMQ): the inbox/dedup-table pattern. Manual acks, one message at a time; in
// one transaction it inserts the message's event_id into processed_messages (ON CONFLICT DO NOTHING) and
// credits the wallet only if the row was inserted; after COMMIT it acknowledges the delivery. It is
// correct: the record of the event and its effect commit together, so a producer retry or a redelivery
// (after a kill anywhere, after a lost acknowledgement) is never applied twice, and a message is
// acknowledged only once its effect is durable, so nothing is lost.
#include "amqp_consumer.h"
#include "wallet_dedup.h"

using namespace idem::targets;

int main() {
  return consumerMain("amqp-dedup-table", [] {
    const AmqpConfig config = amqpConfigFromEnv();
    pqxx::connection db(config.databaseUrl);
    prepareWalletDedup(db);
    AmqpConsumer consumer(config);
    runAmqpConsumer(consumer, [&](const AmqpMessage& m) {
      applyWalletOnce(db, m.entry);
      consumer.ack(m);
    });
  });
}
