#pragma once
/// The seam between the harness and a broker. Everything that names a broker's verbs, its server, its
/// producer or its final state lives in that broker's folder (brokers/valkey, brokers/kafka) behind this
/// interface; the supervisor, the checkers and the report see only what is here, in the broker's own
/// words (entry ids, the server's name in steps).
///
/// One Broker per workspace: the workspace's namespace on the broker (a stream and its group, a topic
/// and its group), reset before each schedule. The harness's own connections go to the broker directly,
/// never through the proxies.
#include "proxy/hub.h"
#include "proxy/tracker.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem::brokers {

/// One message the producer publishes: the event's key (what a partitioned broker keys it by) and its
/// fields in the scenario's order, all strings.
struct Message {
  std::string key;
  std::string eventId; ///< the business event id (a header where the broker has them), may be empty
  std::vector<std::pair<std::string, std::string>> fields;
};

/// Where the group stands, as the broker itself says (asked while a run settles: cheap).
struct Progress {
  /// Entries still to be acknowledged by the group: delivered and not acknowledged (Valkey's pending
  /// entries), or past the group's committed offset (Kafka's lag), as the broker counts them.
  int64_t pending = 0;
  /// Every entry published so far has been delivered to the group at least once.
  bool delivered = false;
  /// Where delivery stands, for the record of a stall: "1700000000000-3", "payments-0@3 payments-1@0".
  std::string position;
};

/// An entry delivered and not acknowledged when the run ended.
struct PendingEntry {
  std::string entry;
  std::string consumer;
  int64_t idleMs = 0;
  int deliveries = 0;
};

/// What the broker holds when the run ended.
struct Leftover {
  std::vector<PendingEntry> pending;    ///< delivered, not acknowledged
  std::vector<std::string> undelivered; ///< the group will deliver them (again)
  /// Settled by a delivery no consumer connection was seen to read (RabbitMQ's no-ack pushes on their way
  /// when their process was killed): gone from the broker, held by no one.
  std::vector<std::string> settledUnseen;
  std::vector<std::string> stream;      ///< every entry the broker holds, in its order
  std::string position;                 ///< Progress::position at the end
};

/// A message found in a dead-letter stream (poison events): its id, and its event id when it has one.
struct DeadLetter {
  std::string id;
  std::optional<std::string> eventId;
};

class Broker {
public:
  virtual ~Broker() = default;

  /// The server's name in steps and faults: "valkey", "kafka".
  virtual const char* name() const = 0;
  /// Its name for people: "Valkey", "Kafka".
  virtual const char* title() const = 0;
  /// Its protocol, for messages: "RESP", "Kafka".
  virtual const char* protocol() const = 0;
  /// What consumers connect to, through the proxies.
  virtual proxy::Upstream upstream() const = 0;
  /// A tracker for one consumer connection to the broker, made when the proxy `listenPort` accepts it.
  /// Its steps speak the history's terms: the entries a step acknowledges are entry ids as deliveries
  /// name them (a Kafka offset commit, which names positions, acknowledges the records it passes).
  virtual proxy::TrackerPtr tracker(int listenPort) = 0;
  /// The namespace's names, recorded with the plan: the stream (topic) and the group.
  virtual std::string stream() const = 0;
  virtual std::string group() const = 0;

  /// Before each schedule: an empty stream (topic) and a new group reading it from the start.
  virtual void reset() = 0;
  /// Publishes `messages` in order; returns each one's entry id, as the broker's deliveries name it.
  virtual std::vector<std::string> publish(const std::vector<Message>& messages) = 0;
  virtual Progress progress() = 0;
  /// The `forget` fault: the broker forgets what the group acknowledged (a failover to a lagging
  /// replica, a lost offset commit), so the group's entries are delivered again.
  virtual void forget() = 0;
  virtual Leftover leftover() = 0;
  /// The `age` fault: `ms` of simulated time pass for the keys of the consumer's namespace that have a TTL
  /// (a `SET seen:<id> NX PX …` mark): each is given what is left of its TTL after `ms`, or deleted when
  /// nothing is. Returns {keys moved, keys expired}; nullopt on a broker that holds no keys of the
  /// consumer's (its marks, if any, live elsewhere).
  virtual std::optional<std::pair<int64_t, int64_t>> ageKeys(int64_t ms) {
    (void)ms;
    return std::nullopt;
  }

  /// Poison events (docs/scenarios.md): the broker's name, in this run's namespace, of the scenario's
  /// dead-letter destination `declared` of kind `kind` ("stream", "queue"), made empty for the run (asked after
  /// reset()); "" when the broker has no destination of that kind (a table is the workspace's, not the
  /// broker's).
  virtual std::string deadLetter(const std::string& kind, const std::string& declared) {
    (void)kind, (void)declared;
    return "";
  }
  /// The variable that gives a consumer that name: DEAD_LETTER_STREAM, DEAD_LETTER_QUEUE.
  virtual const char* deadLetterEnv() const { return "DEAD_LETTER_STREAM"; }
  /// The messages of the dead-letter destination (deadLetter), in order, each with its event id: the
  /// field (a stream's) or the JSON body's member (a queue's) `idField`.
  virtual std::vector<DeadLetter> deadLetters(const std::string& idField) {
    (void)idField;
    return {};
  }

  /// How a target process whose broker proxy listens on `proxyPort` reaches the broker: VALKEY_URL and
  /// REDIS_URL, KAFKA_BOOTSTRAP. Every name must be reserved (target/target_env.h).
  virtual std::map<std::string, std::string> connectionEnv(int proxyPort) const = 0;
  /// What a consumer reads (besides CONSUMER): STREAM and GROUP, TOPIC and GROUP. Reserved names too.
  virtual std::map<std::string, std::string> consumerEnv() const = 0;
  /// Whether the broker's error answers depend on the request (Kafka's carry its correlation id and
  /// layout): then an `error` fault at its step is errorAnswer(), its code by default defaultError().
  /// Otherwise they are fixed replies (Valkey's RESP errors, proxy/errors.h).
  virtual bool answersErrorsByRequest() const { return false; }
  /// The broker's answer to `request` (its whole bytes) failing with error `code`; nullopt when it has none.
  virtual std::optional<std::string> errorAnswer(std::string_view request, const std::string& code) const {
    (void)request, (void)code;
    return std::nullopt;
  }
  /// Whether its error answer ends the connection (AMQP's connection.close: the broker discards whatever
  /// the client sends after it but close-ok, sends nothing more, and closes): the proxy then closes both
  /// sides once the client has it, so that nothing in flight reaches either side.
  virtual bool errorEndsConnection() const { return false; }
  /// The broker's transient error for a step of `verb` (an error fault without a code).
  virtual std::string defaultError(const std::string& verb) const {
    (void)verb;
    return "";
  }
  /// The broker's server restarted (the `restart` fault): the harness's own connection went with it.
  virtual void reconnect() {}
  /// Restarts the broker's server in place itself (the `restart` fault), keeping what it stored; false
  /// when the workspace's servers do it (Valkey, one of the embedded servers).
  virtual bool restart() { return false; }
  /// Before reset(), when the schedule restarts this broker's server: a server shared with other
  /// workspaces (RabbitMQ's node, one per command) must become this workspace's own first, or the restart
  /// would drop connections in their runs, whose schedules hold no such fault. Nothing for the others.
  virtual void ownForRestart() {}
  /// The consumer process whose broker proxy listened on `listenPort` was killed: what its client would
  /// have told the broker had it closed (a Kafka member's LeaveGroup, so that its group does not wait out
  /// its session). Default: nothing (Valkey: its pending entries stay, to be claimed).
  virtual void killed(int listenPort) { (void)listenPort; }
  /// The group drops the member of the live process whose broker proxy listens on `listenPort`, as when its
  /// session or poll interval runs out (the `rebalance` fault): its partitions go to the others. Only a
  /// broker that has "rebalance" (FaultKind::brokerFeature) is asked.
  virtual void evict(int listenPort) { (void)listenPort; }
  /// How long a pause (plan/faults/pause.cc) lasts without a time of its own: long enough for the broker to
  /// hand what a silent consumer holds to another one. Default: max(500, 3 × CLAIM_IDLE_MS) — Valkey's
  /// XAUTOCLAIM min idle time and NATS's AckWait are CLAIM_IDLE_MS; RabbitMQ hands a live connection's
  /// deliveries to no one, and the pause only delays it.
  virtual int64_t pauseMs(int claimIdleMs) const { return std::max<int64_t>(500, 3 * int64_t(claimIdleMs)); }
  /// Whether an entry that a live consumer holds unacknowledged for CLAIM_IDLE_MS is delivered again (to a
  /// Valkey consumer's claim; NATS's AckWait). The plan op records it: a run whose balance has more than
  /// one explanation because of such deliveries can then name the flag that removes them.
  virtual bool redeliversAfterClaimIdle() const { return false; }
  /// Whether a process whose broker proxy listens on `listenPort` has asked to join the group. A
  /// rebalance evicts the old member only then: the group is never left without a member in between (a
  /// broker may then wait out an empty group's join delay, or, as librdkafka's mock does, give the newcomer
  /// the evicted member's id).
  virtual bool joining(int listenPort) {
    (void)listenPort;
    return true;
  }
};

using BrokerPtr = std::unique_ptr<Broker>;

} // namespace idem::brokers
