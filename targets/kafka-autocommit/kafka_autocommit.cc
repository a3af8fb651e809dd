// kafka-autocommit (wallet, Kafka): dedup-table's transaction (a processed_messages row inserted with ON
// CONFLICT DO NOTHING and the credit, committed together), with librdkafka's auto-commit on, as its
// defaults have it: poll() stores the offset of each record it hands over, and a background thread
// commits the stored offsets every 100 ms (auto.commit.interval.ms; the default, 5 s, has the same window,
// only rarer). It is NOT correct: an offset commit that lands after poll() handed a record over and before
// the record's COMMIT, then a kill, loses the record — the group's offset is past it, so no member receives
// it again. Producer retries and redeliveries are deduplicated.
#include "kafka.h"
#include "wallet_dedup.h"

using namespace idem::targets;

int main() {
  return consumerMain("kafka-autocommit", [] {
    const KafkaConfig config = kafkaConfigFromEnv();
    pqxx::connection db(config.databaseUrl);
    prepareWalletDedup(db);
    KafkaConsumer consumer(config, {{"enable.auto.commit", "true"}, {"auto.commit.interval.ms", "100"}});
    runKafkaConsumer(consumer, [&](const KafkaRecord& r) { applyWalletOnce(db, r.entry); });
  });
}
