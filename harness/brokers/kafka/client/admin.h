#pragma once
/// The harness's own Kafka client (librdkafka's C API): it produces a run's events, watches a group's
/// progress (committed offsets against the log end, to know when a run has settled), sets a group's
/// committed offsets (the `forget` fault), and sends a killed member's LeaveGroup.
#include "brokers/kafka/answers.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

typedef struct rd_kafka_s rd_kafka_t;

namespace idem::kafka::client {

/// One record to produce: keyed (one key's records land on one partition), headers in this order.
struct Record {
  std::string key;
  std::string value;
  std::map<std::string, std::string> headers;
};

/// Where a group stands on one partition: the log end (the offset the next record will get) and the
/// group's committed offset (the next record to read), -1 when the group committed none.
struct PartitionProgress {
  int partition = 0;
  int64_t logEnd = 0;
  int64_t committed = -1;
};

class KafkaAdmin {
public:
  /// `bootstrap`: "host:port[,host:port…]". librdkafka connects in the background; throws
  /// std::runtime_error when it refuses its configuration. Its calls may come from any thread.
  explicit KafkaAdmin(const std::string& bootstrap);
  ~KafkaAdmin();
  KafkaAdmin(const KafkaAdmin&) = delete;
  KafkaAdmin& operator=(const KafkaAdmin&) = delete;

  /// Produces `recs` to `topic` (default partitioner, acks=all, linger.ms=0), waits until each was
  /// acknowledged (at most 10 s) and returns their ids "TOPIC-PARTITION@OFFSET" in input order. Throws
  /// std::runtime_error naming the topic when one failed, the wait ran out, or the topic does not exist
  /// (never created by asking for it: the mock would create it with 4 partitions).
  std::vector<std::string> produce(const std::string& topic, const std::vector<Record>& recs);

  /// Every partition of `topic`, in order, with its log end and `group`'s committed offset. One
  /// ListOffsets and one OffsetFetch per call (the partition count is asked once per topic; the consumer
  /// handle of a group, which never joins it, is made once); a query that `timeout` ran out on is asked
  /// once more, for as long, on connections of its own. Throws std::runtime_error on an error or when the
  /// second wait runs out too.
  std::vector<PartitionProgress> progress(const std::string& topic, const std::string& group,
                                          std::chrono::milliseconds timeout);

  /// Every record of `topic`, partition by partition in offset order, up to the log ends when asked: (id
  /// "TOPIC-PARTITION@OFFSET", value) each. Read by a consumer of its own that no group knows (assigned
  /// partitions, no commit). Throws std::runtime_error when `timeout` runs out first.
  std::vector<std::pair<std::string, std::string>> records(const std::string& topic, std::chrono::milliseconds timeout);

  /// Sets `group`'s committed offsets on `topic` (partition -> offset of the next record to read), as a
  /// client that is no member of the group (generation -1, no member id). Throws std::runtime_error with
  /// the broker's error. Kafka takes such a commit while the group is empty; librdkafka's mock only for a
  /// group no member ever joined (UNKNOWN_MEMBER_ID otherwise, live members or not): then commitAs().
  void commit(const std::string& topic, const std::string& group, const std::map<int, int64_t>& offsets);

  /// Sets the committed offsets in the name of member `m` (its group, member id and generation, as the
  /// proxy's tracker learnt them: membershipOf), with an OffsetCommit v2 sent to the coordinator at
  /// `hostPort` on a new connection. The broker takes it while `m` is a member of the current generation
  /// (the mock: in its Up and Rebalancing states). Returns false when every partition was answered
  /// REBALANCE_IN_PROGRESS (the group is between a JoinGroup and its SyncGroups: ask again once it is up).
  /// Throws std::runtime_error naming each partition's error (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, …), on
  /// a connection failure, or when `timeout` runs out.
  static bool commitAs(const std::string& hostPort, const Membership& m, const std::string& topic,
                       const std::map<int, int64_t>& offsets, std::chrono::milliseconds timeout);

  /// Sends `m`'s LeaveGroup (leaveGroupRequest) to the coordinator at `hostPort` ("host:port") on a new
  /// connection and reads the whole response frame; returns the response's error code (0, or e.g. 25
  /// UNKNOWN_MEMBER_ID). Throws std::runtime_error on a connection failure, a malformed answer, or when
  /// `timeout` runs out.
  static int16_t leaveGroup(const std::string& hostPort, const Membership& m, std::chrono::milliseconds timeout);

  /// Drops what is kept for `topic` and `group` (the partition count, the group's consumer handle and its
  /// threads): a run that is over, whose topic and group no call names again.
  void forget(const std::string& topic, const std::string& group);

private:
  /// Sends a request frame on a new connection and reads the whole response frame; its body after the
  /// correlation id (checked).
  static std::string roundTrip(const std::string& hostPort, const std::string& frame, int32_t correlation,
                               std::chrono::milliseconds timeout, const std::string& what);
  rd_kafka_t* consumerOf(const std::string& group);
  int partitionsOf(const std::string& topic, std::chrono::milliseconds timeout);

  std::string bootstrap_;
  rd_kafka_t* producer_ = nullptr;
  std::mutex mu_; ///< the caches below
  std::map<std::string, rd_kafka_t*> consumers_; ///< by group
  std::map<std::string, int> partitions_;        ///< by topic
};

} // namespace idem::kafka::client
