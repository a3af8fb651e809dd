// kafka-commit-after (wallet, Kafka): auto-commit off; for each record BEGIN; UPDATE wallets SET
// balance_halala = balance_halala + <amount> WHERE id = <wallet>; COMMIT; then a synchronous commit of the
// offset after it. Nothing is lost, but it has no dedup, so it is NOT correct: a producer retry (same
// event_id at a new offset) is applied twice, and so is a record redelivered after a kill between its
// COMMIT and its offset commit. A failed offset commit (a rebalance in progress) is printed and the
// consumer goes on: the record is redelivered.
#include "kafka.h"

#include <pqxx/pqxx>

#include <iostream>

using namespace idem::targets;

int main() {
  return consumerMain("kafka-commit-after", [] {
    const KafkaConfig config = kafkaConfigFromEnv();
    pqxx::connection db(config.databaseUrl);
    KafkaConsumer consumer(config, {{"enable.auto.commit", "false"}});
    runKafkaConsumer(consumer, [&](const KafkaRecord& r) {
      pqxx::work tx(db);
      tx.exec("UPDATE wallets SET balance_halala = balance_halala + " + std::to_string(integerField(r.entry, "amount")) +
              " WHERE id = " + tx.quote(r.entry.field("wallet")));
      tx.commit();
      if (const std::string err = consumer.commit(r); !err.empty())
        std::cerr << "kafka-commit-after: offset commit after " << r.entry.id << ": " << err << std::endl;
    });
  });
}
