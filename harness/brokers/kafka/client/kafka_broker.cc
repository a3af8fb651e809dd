#include "brokers/kafka/client/kafka_broker.h"
#include "brokers/kafka/client/admin.h"
#include "brokers/kafka/client/embedded.h"

#include "brokers/kafka/answers.h"
#include "brokers/kafka/delivery.h"
#include "brokers/kafka/errors.h"
#include "brokers/kafka/tracker.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>

namespace idem::kafka::client {

namespace {

constexpr std::chrono::milliseconds kAsk{5000};

/// "topic-3@17" -> ("topic-3", 17); nullopt when it is no position.
std::optional<std::pair<std::string, int64_t>> splitPosition(const std::string& id) {
  auto at = id.rfind('@');
  if (at == std::string::npos || at == 0) return std::nullopt;
  try {
    return std::make_pair(id.substr(0, at), std::stoll(id.substr(at + 1)));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

} // namespace

/// What the run's trackers and its producer share across the hub's I/O thread and the supervisor's: the
/// records published (by partition), those no fetch has delivered yet, and the trackers by listener.
struct Ledger {
  std::mutex mu;
  std::map<std::string, std::map<int64_t, std::string>> published; ///< "topic-p" -> offset -> entry id
  std::set<std::string> undelivered;
  /// By the listener that accepted them; kept past their connections, for what a killed process's showed.
  std::multimap<int, std::shared_ptr<proxy::Tracker>> trackers;
  /// Listen port -> the generation in which the harness evicted the process behind it (a rebalance), until
  /// that process's connections show a later generation (it rejoined; the mock may give it its old id).
  std::map<int, int32_t> evicted;
  /// Held while a tracker decodes, and while the harness reads a live tracker's group membership (the
  /// proxies' thread feeds them). Taken before `mu` when both are.
  std::mutex feed;

  /// The published records an offset commit passes: on each committed partition, every one below the
  /// committed position (the next offset to read). All of them, not only those no earlier commit passed:
  /// a record below a committed position can be delivered again (a rebalance, a member that commits what
  /// it no longer owns), and the commit that passes it then settles it again.
  std::vector<std::string> passed(const std::vector<std::string>& positions) {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<std::string> out;
    for (const auto& pos : positions) {
      auto p = splitPosition(pos);
      if (!p) continue;
      auto it = published.find(p->first);
      if (it == published.end()) continue;
      for (auto r = it->second.begin(); r != it->second.end() && r->first < p->second; ++r) out.push_back(r->second);
    }
    return out;
  }

  void delivered(const std::vector<proxy::EntryView>& entries) {
    if (entries.empty()) return;
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& e : entries) undelivered.erase(e.id);
  }
};

namespace {

/// The member of `group` with the newest generation the run's connections showed, if any.
std::optional<Membership> newestMember(Ledger& ledger, const std::string& group) {
  std::optional<Membership> newest;
  std::lock_guard<std::mutex> feed(ledger.feed);
  std::lock_guard<std::mutex> lock(ledger.mu);
  for (const auto& [port, t] : ledger.trackers)
    if (auto m = membershipOf(*t); m && !m->member.empty() && m->group == group &&
                                   (!newest || m->generation > newest->generation))
      newest = *m;
  return newest;
}

/// The Kafka tracker, with its steps in the history's terms: an offset commit acknowledges the records it
/// passes (the tracker names the positions), and only a Fetch is a blocking read — a JoinGroup the
/// coordinator holds through a rebalance is a request its client waits on, not a consumer at rest.
class RunTracker final : public proxy::Tracker {
public:
  using CommitTxn = std::function<void(const std::vector<std::string>&)>;
  RunTracker(std::shared_ptr<proxy::Tracker> inner, std::shared_ptr<Ledger> ledger, int listenPort, CommitTxn commitTxn)
      : inner_(std::move(inner)), ledger_(std::move(ledger)), listenPort_(listenPort), commitTxn_(std::move(commitTxn)) {}

  proxy::Decode onClient(std::string_view buf, proxy::ClientMsg& out) override {
    proxy::Decode d;
    {
      std::lock_guard<std::mutex> lock(ledger_->feed);
      d = inner_->onClient(buf, out);
    }
    if (d == proxy::Decode::Message && out.kind == proxy::ClientMsg::Kind::RequestEnd) {
      txnSteps_.push_back(out.step.verb == "END_TXN" ? out.step.acked : std::vector<std::string>{});
      if (!out.step.acked.empty()) out.step.acked = ledger_->passed(out.step.acked);
      if (!out.step.read) out.step.blocking = false;
    }
    return d;
  }

  proxy::Decode onServer(std::string_view buf, proxy::ServerMsg& out) override {
    proxy::Decode d;
    {
      std::lock_guard<std::mutex> lock(ledger_->feed);
      d = inner_->onServer(buf, out);
    }
    if (d == proxy::Decode::Message && out.kind == proxy::ServerMsg::Kind::ReplyEnd) {
      ledger_->delivered(out.reply.delivered);
      if (!out.reply.delivered.empty()) out.reply.stale = evicted();
      if (!txnSteps_.empty()) {
        const std::vector<std::string> positions = std::move(txnSteps_.front());
        txnSteps_.pop_front();
        // The embedded broker answers a transaction's offsets and its commit without storing the offsets
        // (librdkafka's mock): stored here, before the client learns its transaction committed.
        if (!positions.empty() && !out.reply.error) commitTxn_(positions);
      }
    }
    return d;
  }

  void withdrawLast() override {
    std::lock_guard<std::mutex> lock(ledger_->feed);
    inner_->withdrawLast();
    if (!txnSteps_.empty()) txnSteps_.pop_back();
  }

private:
  /// Whether the process behind this listener is a member its group evicted and it has not rejoined: no
  /// connection of it shows a member other than the evicted one.
  bool evicted() {
    std::lock_guard<std::mutex> feed(ledger_->feed);
    std::lock_guard<std::mutex> lock(ledger_->mu);
    auto it = ledger_->evicted.find(listenPort_);
    if (it == ledger_->evicted.end()) return false;
    auto [a, b] = ledger_->trackers.equal_range(listenPort_);
    for (auto t = a; t != b; ++t)
      if (auto m = membershipOf(*t->second); m && m->generation > it->second) {
        ledger_->evicted.erase(it); // it rejoined
        return false;
      }
    return true;
  }

  std::shared_ptr<proxy::Tracker> inner_;
  std::shared_ptr<Ledger> ledger_;
  int listenPort_;
  CommitTxn commitTxn_;
  /// Per step request not yet answered, in order: an END_TXN's positions (the offsets its transaction
  /// commits), else none.
  std::deque<std::vector<std::string>> txnSteps_;
};

} // namespace

KafkaBroker::KafkaBroker(int partitions)
    : partitions_(partitions), ledger_(std::make_shared<Ledger>()), syncAssignments_(std::make_shared<SyncAssignments>()),
      txnOffsets_(std::make_shared<TxnOffsets>()) {
  server_ = std::make_unique<EmbeddedKafka>();
  admin_ = std::make_unique<KafkaAdmin>(server_->bootstrap());
}

KafkaBroker::~KafkaBroker() = default;

proxy::Upstream KafkaBroker::upstream() const {
  const std::string& b = server_->bootstrap();
  auto colon = b.rfind(':');
  return {b.substr(0, colon), std::stoi(b.substr(colon + 1))};
}

proxy::TrackerPtr KafkaBroker::tracker(int listenPort) {
  TrackerOptions o;
  o.lateSyncRejoins = true; // librdkafka's mock refuses a late follower's SyncGroup (tracker.h)
  o.syncAssignments = syncAssignments_;
  o.txnOffsets = txnOffsets_; // a transaction's offsets and its EndTxn come on different connections
  // The mock answers a Fetch that finds nothing at its max wait, not when a record arrives (tracker.h):
  // librdkafka's default fetch.wait.max.ms, so that a kafkajs consumer at its 5 s default reads as soon.
  o.fetchWaitCapMs = 500;
  // One broker: every address an answer names is this process's listener.
  o.addressFor = [listenPort](int32_t, const Address&) -> std::optional<Address> {
    return Address{"127.0.0.1", listenPort};
  };
  std::shared_ptr<proxy::Tracker> inner(makeTracker(std::move(o)));
  {
    std::lock_guard<std::mutex> lock(ledger_->mu);
    ledger_->trackers.emplace(listenPort, inner);
  }
  return std::make_unique<RunTracker>(inner, ledger_, listenPort,
                                      [this](const std::vector<std::string>& positions) { commitTransaction(positions); });
}

void KafkaBroker::reset() {
  // A new topic and group per run: nothing of the last run's records or offsets is seen again.
  // The broker is this workspace's alone: short names, which entry ids ("events.3-1@0") carry.
  forgetPending_ = false;
  if (!server_->alive()) {
    // It died under the last run (which then could not be judged): the next one gets a broker again, so
    // that one broken run does not make every later run of the workspace an error.
    admin_.reset();
    server_ = std::make_unique<EmbeddedKafka>();
    admin_ = std::make_unique<KafkaAdmin>(server_->bootstrap());
  } else if (run_ > 0) {
    admin_->forget(topic_, group_); // its handle per group would pile up run after run
  }
  ++run_;
  topic_ = fmt::format("events.{}", run_);
  group_ = fmt::format("consumers.{}", run_);
  server_->command(fmt::format("topic {} {}", topic_, partitions_));
  std::lock_guard<std::mutex> lock(ledger_->mu);
  ledger_->published.clear();
  ledger_->undelivered.clear();
  ledger_->trackers.clear();
  ledger_->evicted.clear();
  std::lock_guard<std::mutex> txn(txnOffsets_->mu);
  txnOffsets_->byTxn.clear(); // the last run's open transactions: their topic is gone from this run
}

std::vector<std::string> KafkaBroker::publish(const std::vector<brokers::Message>& messages) {
  std::vector<Record> recs;
  for (const auto& m : messages) {
    nlohmann::json value = nlohmann::json::object();
    for (const auto& [k, v] : m.fields) value[k] = v;
    Record r{m.key, value.dump(), {}};
    if (!m.eventId.empty()) r.headers["event_id"] = m.eventId;
    recs.push_back(std::move(r));
  }
  auto ids = admin_->produce(topic_, recs);
  std::lock_guard<std::mutex> lock(ledger_->mu);
  for (const auto& id : ids) {
    auto p = splitPosition(id);
    if (p) ledger_->published[p->first][p->second] = id;
    ledger_->undelivered.insert(id);
  }
  return ids;
}

namespace {

/// Where the group stands, for people: each partition's committed position ("events.1-0@0 events.1-1@6").
/// A partition the group never committed is at 0: its records are all still to be read.
std::string positions(const std::string& topic, const std::vector<PartitionProgress>& parts) {
  std::string out;
  for (const auto& p : parts)
    out += (out.empty() ? "" : " ") + positionId(topic, p.partition, std::max<int64_t>(p.committed, 0));
  return out;
}

} // namespace

brokers::Progress KafkaBroker::progress() {
  if (forgetPending_) forget();
  brokers::Progress out;
  const auto parts = admin_->progress(topic_, group_, kAsk);
  for (const auto& p : parts) out.pending += std::max<int64_t>(0, p.logEnd - std::max<int64_t>(p.committed, 0));
  out.position = positions(topic_, parts);
  std::lock_guard<std::mutex> lock(ledger_->mu);
  out.delivered = ledger_->undelivered.empty();
  return out;
}

void KafkaBroker::forget() {
  // A lost __consumer_offsets write: the group's committed offsets go back to the start. Committed in the
  // name of a live member of the newest generation (the mock, unlike Kafka, refuses commits from outside
  // a group that ever had a member); with none, from outside the group.
  std::map<int, int64_t> zero;
  for (int p = 0; p < partitions_; ++p) zero[p] = 0;
  const std::optional<Membership> newest = newestMember(*ledger_, group_);
  // Between a JoinGroup and its SyncGroups (forget:after:JOIN_GROUP#1) the group takes no commit: it is
  // made once the group is up, at the next look at the broker's progress.
  forgetPending_ = false;
  if (newest) forgetPending_ = !KafkaAdmin::commitAs(server_->bootstrap(), *newest, topic_, zero, kAsk);
  else admin_->commit(topic_, group_, zero);
}

void KafkaBroker::commitTransaction(const std::vector<std::string>& positions) {
  std::map<int, int64_t> offsets; // of the run's topic, by partition
  for (const auto& pos : positions) {
    const auto p = splitPosition(pos);
    const auto dash = p ? p->first.rfind('-') : std::string::npos;
    if (dash == std::string::npos || p->first.substr(0, dash) != topic_) continue;
    try {
      int64_t& offset = offsets[std::stoi(p->first.substr(dash + 1))]; // 0 when new: offsets are not negative
      offset = std::max(offset, p->second);
    } catch (const std::exception&) {
    }
  }
  if (offsets.empty()) return;
  // As the consumer's group commits them, in the name of its newest member (the mock refuses commits from
  // outside a group that had one); a refusal leaves the offsets where they were, as a broker would.
  try {
    if (const auto newest = newestMember(*ledger_, group_)) KafkaAdmin::commitAs(server_->bootstrap(), *newest, topic_, offsets, kAsk);
    else admin_->commit(topic_, group_, offsets);
  } catch (const std::exception&) {
  }
}

std::string KafkaBroker::deadLetter(const std::string& kind, const std::string& declared) {
  if (kind != "topic") return "";
  deadLetter_ = topic_ + "." + declared; // the run's topic is new each run: so is this one
  server_->command(fmt::format("topic {} 1", deadLetter_));
  return deadLetter_;
}

std::vector<brokers::DeadLetter> KafkaBroker::deadLetters(const std::string& idField) {
  std::vector<brokers::DeadLetter> out;
  if (deadLetter_.empty()) return out;
  for (const auto& [id, value] : admin_->records(deadLetter_, std::chrono::seconds(10))) {
    brokers::DeadLetter d{id, std::nullopt};
    const auto v = nlohmann::json::parse(value, nullptr, false);
    if (v.is_object() && v.contains(idField) && v[idField].is_string()) d.eventId = v[idField].get<std::string>();
    out.push_back(std::move(d));
  }
  return out;
}

brokers::Leftover KafkaBroker::leftover() {
  brokers::Leftover l;
  const auto parts = admin_->progress(topic_, group_, kAsk);
  for (const auto& p : parts) {
    for (int64_t o = 0; o < p.logEnd; ++o) {
      std::string id = positionId(topic_, p.partition, o);
      l.stream.push_back(id);
      if (o >= p.committed) l.undelivered.push_back(id); // the group will deliver it (again)
    }
  }
  l.position = positions(topic_, parts);
  return l;
}

std::map<std::string, std::string> KafkaBroker::connectionEnv(int proxyPort) const {
  return {{"KAFKA_BOOTSTRAP", fmt::format("127.0.0.1:{}", proxyPort)}};
}

void KafkaBroker::killed(int listenPort) {
  // What its client would have sent had it closed: without it the group waits out the member's session
  // before it gives its partitions to another. Its connections are closed (Hub::close returned): nothing
  // feeds its trackers any more.
  leave(listenPort, true);
}

void KafkaBroker::evict(int listenPort) {
  // As the coordinator does when a member's session or poll interval runs out; its client learns of it at
  // its next heartbeat or commit (UNKNOWN_MEMBER_ID).
  leave(listenPort, false);
}

bool KafkaBroker::joining(int listenPort) {
  std::lock_guard<std::mutex> feed(ledger_->feed);
  std::lock_guard<std::mutex> lock(ledger_->mu);
  auto [a, b] = ledger_->trackers.equal_range(listenPort);
  for (auto it = a; it != b; ++it)
    if (askedToJoin(*it->second)) return true;
  return false;
}

void KafkaBroker::leave(int listenPort, bool forget) {
  std::vector<Membership> members;
  {
    std::lock_guard<std::mutex> feed(ledger_->feed);
    std::lock_guard<std::mutex> lock(ledger_->mu);
    auto [a, b] = ledger_->trackers.equal_range(listenPort);
    for (auto it = a; it != b; ++it)
      if (auto m = membershipOf(*it->second); m && !m->member.empty()) members.push_back(*m);
    if (forget) ledger_->trackers.erase(listenPort);
    else if (!members.empty()) ledger_->evicted[listenPort] = members.front().generation;
  }
  std::set<std::string> sent;
  for (const auto& m : members) {
    if (!sent.insert(m.group + "/" + m.member).second) continue;
    try {
      KafkaAdmin::leaveGroup(server_->bootstrap(), m, kAsk);
    } catch (const std::exception&) {
      // The session timeout then does it.
    }
  }
}

bool KafkaBroker::restart() {
  // Every connection closes and new ones are refused, then it accepts again on the same port with its
  // topics, records, groups and committed offsets: a broker that comes back with its log. (The proxies
  // refuse connections meanwhile too, as a restarting server's port does.)
  server_->command("down -1");
  server_->command("up -1");
  return true;
}

std::optional<std::string> KafkaBroker::errorAnswer(std::string_view request, const std::string& code) const {
  auto c = errorCode(code);
  if (!c) return std::nullopt;
  return errorResponse(request, *c);
}

std::string KafkaBroker::defaultError(const std::string& verb) const {
  // What a broker answers while the group rebalances, its coordinator loads, or a partition's leader moves.
  if (verb == "COMMIT_OFFSET" || verb == "JOIN_GROUP" || verb == "SYNC_GROUP" || verb == "HEARTBEAT" ||
      verb == "TXN_OFFSET_COMMIT")
    return "REBALANCE_IN_PROGRESS";
  if (verb == "OFFSET_FETCH" || verb == "LEAVE_GROUP" || verb == "INIT_PRODUCER_ID" || verb == "ADD_OFFSETS_TO_TXN" ||
      verb == "ADD_PARTITIONS_TO_TXN" || verb == "END_TXN")
    return "COORDINATOR_LOAD_IN_PROGRESS";
  return "NOT_LEADER_OR_FOLLOWER"; // FETCH, PRODUCE, LIST_OFFSETS
}

} // namespace idem::kafka::client
