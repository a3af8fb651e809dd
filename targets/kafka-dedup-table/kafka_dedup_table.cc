// kafka-dedup-table (wallet, Kafka): the inbox/dedup-table pattern. Auto-commit off; in one transaction it
// inserts the record's event_id into processed_messages (ON CONFLICT DO NOTHING) and credits the wallet only
// if the row was inserted; after COMMIT it commits the offset after the record, synchronously. It is
// correct: the record of the event and its effect commit together, so a producer retry or a redelivery
// (after a kill anywhere, after a failed offset commit, after a rebalance) is never applied twice, and an
// offset is committed only once its record's effect is durable, so nothing is lost.
#include "kafka.h"
#include "wallet_dedup.h"

#include <iostream>

using namespace idem::targets;

int main() {
  return consumerMain("kafka-dedup-table", [] {
    const KafkaConfig config = kafkaConfigFromEnv();
    pqxx::connection db(config.databaseUrl);
    prepareWalletDedup(db);
    KafkaConsumer consumer(config, {{"enable.auto.commit", "false"}});
    runKafkaConsumer(consumer, [&](const KafkaRecord& r) {
      applyWalletOnce(db, r.entry);
      if (const std::string err = consumer.commit(r); !err.empty())
        std::cerr << "kafka-dedup-table: offset commit after " << r.entry.id << ": " << err << std::endl;
    });
  });
}
