// kafka-revoke-unsafe (wallet, Kafka): auto-commit off; it reads a batch (polls until 10 records, or until
// a poll finds nothing for 100 ms), applies each record, then commits the offsets after the batch's last
// record of every partition in it — also of partitions a rebalance took away while it was working (it
// leaves rebalances to librdkafka's default and never looks at what it still owns). Each record is
// checked, then applied: SELECT 1 FROM processed_messages WHERE event_id = $1 on its own, and if there is
// no row, in one transaction INSERT … ON CONFLICT DO NOTHING and the credit (whatever the INSERT did).
//
// Alone, each habit is harmless: in any history with one member on a partition at a time, the check
// sees every event already applied (kills, redeliveries and producer retries come one after another).
// Together they are NOT correct: when the group drops it in the middle of a batch (its batch outlasted
// the group's patience) and a new member takes its partitions, the newcomer reads them from the last
// committed offset while the old owner still applies the rest of its batch, so two members apply one record
// at once; both checks find no row, the second INSERT does nothing, and both credits count: a duplicate
// under `rebalance`. The fix is either habit's: drop the records of revoked partitions (a rebalance
// callback, and a commit that fails for a member that is no longer one), or credit only when the INSERT
// inserted (kafka-dedup-table).
#include "kafka.h"
#include "wallet_dedup.h"

#include <pqxx/pqxx>

#include <iostream>
#include <map>

using namespace idem::targets;

int main() {
  return consumerMain("kafka-revoke-unsafe", [] {
    const KafkaConfig config = kafkaConfigFromEnv();
    pqxx::connection db(config.databaseUrl);
    prepareWalletDedup(db);
    db.prepare("seen_event", "SELECT 1 FROM processed_messages WHERE event_id = $1");
    db.prepare_now("seen_event");
    KafkaConsumer consumer(config, {{"enable.auto.commit", "false"}});
    std::vector<KafkaRecord> batch;
    while (!stopRequested()) {
      batch.clear();
      while (batch.size() < 10 && !stopRequested()) {
        auto r = consumer.poll(100);
        if (!r) break;
        batch.push_back(std::move(*r));
      }
      std::map<std::pair<std::string, int32_t>, int64_t> next;
      for (const KafkaRecord& r : batch) {
        bool seen = false;
        {
          pqxx::nontransaction check(db);
          seen = !check.exec_prepared("seen_event", r.entry.field("event_id")).empty();
        }
        if (!seen) { // the check said "new": the credit follows whatever the INSERT found meanwhile
          pqxx::work tx(db);
          tx.exec_prepared("record_event", r.entry.field("event_id"));
          tx.exec_prepared("credit_wallet", std::to_string(integerField(r.entry, "amount")), r.entry.field("wallet"));
          tx.commit();
        }
        next[{r.topic, r.partition}] = r.offset + 1;
      }
      if (next.empty())
        continue;
      std::vector<Position> positions;
      for (const auto& [tp, offset] : next)
        positions.push_back(Position{tp.first, tp.second, offset});
      if (const std::string err = consumer.commit(positions); !err.empty())
        std::cerr << "kafka-revoke-unsafe: offset commit: " << err << std::endl;
    }
  });
}
