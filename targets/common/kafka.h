#pragma once
/// The Kafka side of the Kafka reference consumers (docs/target-contract.md, Kafka), over librdkafka
/// 2.0.2's C API. A consumer subscribes to $TOPIC in group $GROUP with client.id $CONSUMER through
/// $KAFKA_BOOTSTRAP; what it commits, and when, is each target's own (that is what idemproof judges).
///
/// Settings every consumer shares: auto.offset.reset=earliest (a new group reads the topic from its
/// start); session.timeout.ms=6000 and heartbeat.interval.ms=2000 (the smallest session a Kafka broker
/// accepts by default: a member that vanishes without leaving costs the group that long, and the embedded
/// broker keeps a group its last member left rebalancing for the session timeout less 1 s);
/// fetch.wait.max.ms=100 (a fetch with nothing new blocks that long, so SIGTERM is seen soon).
/// SIGTERM (consumerMain's flag) ends runKafkaConsumer between records: the consumer closes (LeaveGroup,
/// and with auto-commit a last commit) and the process exits 0.
#include "consumer.h"

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace idem::targets {

/// The process's settings, from the environment the harness gives.
struct KafkaConfig {
  std::string databaseUrl;
  std::string bootstrap;
  std::string topic;
  std::string group;
  std::string consumer;
};

/// Reads KafkaConfig from the environment. Throws std::runtime_error naming a missing variable.
KafkaConfig kafkaConfigFromEnv();

/// A record as the consumer sees it. `entry.id` is "topic-partition@offset"; its fields are the JSON
/// value's (every value a string; another JSON type as its text), and the `event_id` header when the
/// value has no such field.
struct KafkaRecord {
  Entry entry;
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
};

/// A position to commit: the offset of the next record to read.
struct Position {
  std::string topic;
  int32_t partition = 0;
  int64_t next = 0;
};

class KafkaConsumer {
public:
  /// Creates the consumer and subscribes. `settings` are added to (and override) the shared ones.
  KafkaConsumer(const KafkaConfig& config, const std::map<std::string, std::string>& settings);
  /// Closes (LeaveGroup) and destroys.
  ~KafkaConsumer();
  KafkaConsumer(const KafkaConsumer&) = delete;
  KafkaConsumer& operator=(const KafkaConsumer&) = delete;

  /// The next record within `timeoutMs`, or nullopt. Rebalances happen inside (librdkafka's default:
  /// revoke, then assign). Throws on a fatal error; prints other errors to stderr.
  std::optional<KafkaRecord> poll(int timeoutMs);
  /// Commits synchronously. Returns the error text, empty when it succeeded (a commit can fail for
  /// reasons a consumer lives with: a rebalance in progress, a member the group no longer knows).
  std::string commit(const std::vector<Position>& positions);
  /// commit() of the position after `r`.
  std::string commit(const KafkaRecord& r) { return commit({Position{r.topic, r.partition, r.offset + 1}}); }
  /// The partitions assigned now.
  std::vector<std::pair<std::string, int32_t>> assignment();

private:
  rd_kafka_t* rk_ = nullptr;
};

using KafkaHandler = std::function<void(const KafkaRecord&)>;

/// Polls (100 ms at a time) and hands each record to `handler` until SIGTERM.
void runKafkaConsumer(KafkaConsumer& consumer, const KafkaHandler& handler);

} // namespace idem::targets
