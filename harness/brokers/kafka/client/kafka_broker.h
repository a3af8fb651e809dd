#pragma once
/// Kafka behind the broker seam (brokers/broker.h): a topic and a consumer group per run on the embedded
/// broker (librdkafka's mock cluster, its own process per workspace). The producer publishes each event
/// keyed by its key, its fields as a JSON object of strings and an `event_id` header; delivered means
/// fetched by a member's client; acknowledged means passed by a committed offset; settled means that on
/// every partition the group's committed offset is the log end.
#include "brokers/broker.h"

#include <memory>
#include <string>

namespace idem::kafka {
struct SyncAssignments; // brokers/kafka/tracker.h
struct TxnOffsets;      // brokers/kafka/tracker.h
} // namespace idem::kafka

namespace idem::kafka::client {

class EmbeddedKafka;
class KafkaAdmin;
struct Ledger;

class KafkaBroker final : public brokers::Broker {
public:
  /// Starts an embedded broker for this workspace. `partitions`: of each run's topic.
  explicit KafkaBroker(int partitions = 3);
  ~KafkaBroker() override;

  /// What Kafka has that not every broker has (FaultKind::brokerFeature): a group's members share the
  /// topic's partitions, dealt again when one joins (the rebalance fault).
  static bool has(const std::string& feature) { return feature == "rebalance"; }
  /// A run mostly waits on the group's timers (the embedded broker lets a group's first member in after 3 s
  /// and a replacement after 5 s): many runs at once cost little more CPU than one.
  static constexpr bool kRunsMostlyWait = true;
  const char* name() const override { return "kafka"; }
  static constexpr const char* kTitle = "Kafka"; ///< the broker's name for people
  const char* title() const override { return kTitle; }
  const char* protocol() const override { return "Kafka"; }
  proxy::Upstream upstream() const override;
  proxy::TrackerPtr tracker(int listenPort) override;
  std::string stream() const override { return topic_; }
  std::string group() const override { return group_; }
  void reset() override;
  std::vector<std::string> publish(const std::vector<brokers::Message>& messages) override;
  brokers::Progress progress() override;
  void forget() override;
  brokers::Leftover leftover() override;
  std::map<std::string, std::string> connectionEnv(int proxyPort) const override;
  std::map<std::string, std::string> consumerEnv() const override { return {{"TOPIC", topic_}, {"GROUP", group_}}; }
  void killed(int listenPort) override;
  void evict(int listenPort) override;
  bool joining(int listenPort) override;
  /// The session timeout of the consumers of docs/target-contract.md (session.timeout.ms 6000), the group's
  /// rebalance after it (the embedded broker waits the session timeout less 1 s for the members to rejoin)
  /// and a few seconds for the member that takes the partitions to read and apply: 16 s. A consumer with a
  /// longer session needs a pause's own MS.
  int64_t pauseMs(int) const override { return 16000; }
  bool answersErrorsByRequest() const override { return true; }
  bool restart() override;
  std::optional<std::string> errorAnswer(std::string_view request, const std::string& code) const override;
  std::string defaultError(const std::string& verb) const override;
  /// "<topic>.<declared>", a topic of one partition made for the run.
  std::string deadLetter(const std::string& kind, const std::string& declared) override;
  const char* deadLetterEnv() const override { return "DEAD_LETTER_TOPIC"; }
  std::vector<brokers::DeadLetter> deadLetters(const std::string& idField) override;

private:
  /// Sends the LeaveGroup of each member the connections accepted on `listenPort` joined; `forget`: those
  /// connections are closed, their trackers go.
  void leave(int listenPort, bool forget);
  /// Stores a committed transaction's offsets ("topic-p@offset") in the run's group.
  void commitTransaction(const std::vector<std::string>& positions);

  int partitions_;
  int run_ = 0;
  std::string topic_, group_;
  std::string deadLetter_; ///< the run's dead-letter topic, "" when the scenario has none
  std::unique_ptr<EmbeddedKafka> server_;
  std::unique_ptr<KafkaAdmin> admin_;
  std::shared_ptr<Ledger> ledger_;
  /// The leaders' SyncGroup assignments, for the late followers' answers (tracker.h, lateSyncRejoins).
  std::shared_ptr<SyncAssignments> syncAssignments_;
  /// The positions of transactions not yet committed (tracker.h): shared by the run's connections.
  std::shared_ptr<TxnOffsets> txnOffsets_;
  bool forgetPending_ = false; ///< a forget the group refused while rebalancing: made at the next progress()
};

} // namespace idem::kafka::client
