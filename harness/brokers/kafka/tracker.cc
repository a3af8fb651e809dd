#include "brokers/kafka/tracker.h"

#include "brokers/kafka/api.h"
#include "brokers/kafka/errors.h"
#include "brokers/kafka/messages.h"
#include "brokers/kafka/wire.h"

#include <algorithm>
#include <deque>
#include <utility>
#include <vector>

namespace idem::kafka {
namespace {

/// The int32 length prefix of a frame at the start of `buf`: Message (size = 4 + length) once the whole
/// frame is there, NeedMoreData before, Invalid for a length below `minimum` or above kMaxFrame.
proxy::Decode frame(std::string_view buf, size_t minimum, size_t& size) {
  if (buf.size() < 4)
    return proxy::Decode::NeedMoreData;
  Reader r(buf);
  const int32_t length = r.int32();
  if (length < 0 || static_cast<size_t>(length) < minimum || static_cast<size_t>(length) > kMaxFrame)
    return proxy::Decode::Invalid;
  size = 4 + static_cast<size_t>(length);
  return buf.size() < size ? proxy::Decode::NeedMoreData : proxy::Decode::Message;
}

/// Who sends a SyncGroup: its group, generation and member, and (v5+) the protocol it names.
struct SyncAsk {
  std::string group, member;
  int32_t generation = 0;
  std::optional<std::string> protocolType, protocolName;
};

/// Reads a SyncGroup request body of `version`: who asks (`ask`), and the assignments a leader gives in it
/// (member id, assignment bytes). False when it does not decode.
bool readSyncGroup(std::string_view body, int16_t version, SyncAsk& ask,
                   std::vector<std::pair<std::string, std::string>>& given) {
  Reader r(body);
  const bool compact = version >= 4;
  const auto group = r.string(compact);
  ask.generation = r.int32();
  const auto member = r.string(compact);
  if (version >= 3) r.string(compact); // GroupInstanceId
  if (version >= 5) {
    if (auto t = r.string(compact)) ask.protocolType = std::string(*t);
    if (auto n = r.string(compact)) ask.protocolName = std::string(*n);
  }
  const auto count = r.arrayCount(compact);
  for (size_t i = 0; count && i < *count && !r.failed(); ++i) {
    const auto id = r.string(compact);
    const auto assignment = r.bytes(compact);
    if (compact) r.skipTags();
    if (id && assignment) given.emplace_back(std::string(*id), std::string(*assignment));
  }
  if (r.failed() || !group || !member) return false;
  ask.group = std::string(*group);
  ask.member = std::string(*member);
  return true;
}

/// A request sent and not answered yet.
struct Pending {
  int32_t correlation = 0;
  int16_t key = -1, version = 0;
  bool step = false;
  bool decode = false; ///< its answer is read (a step, or set-up the tracker rewrites)
  std::map<TopicPartition, int64_t> positions; ///< Fetch: where each partition is read from
  std::optional<SyncAsk> sync; ///< SyncGroup, with TrackerOptions::lateSyncRejoins: who asked
  std::optional<std::string> txnId;   ///< TxnOffsetCommit: its transaction, whose positions it added
  std::vector<std::string> txnAdded;  ///< TxnOffsetCommit: those positions, taken back if it fails
};

class KafkaTracker final : public proxy::Tracker {
public:
  explicit KafkaTracker(TrackerOptions options) : options_(std::move(options)) {
    if (!options_.txnOffsets) options_.txnOffsets = std::make_shared<TxnOffsets>();
  }

  proxy::Decode onClient(std::string_view buf, proxy::ClientMsg& out) override {
    out = proxy::ClientMsg{};
    const proxy::Decode d = frame(buf, 8, out.size);
    if (d != proxy::Decode::Message)
      return d;
    Reader r(buf.substr(4, out.size - 4));
    Pending p;
    p.key = r.int16();
    p.version = r.int16();
    p.correlation = r.int32();
    const ApiInfo a = apiInfo(p.key);
    if (a.role == ApiRole::Opaque || p.version < 0)
      return proxy::Decode::Invalid;
    p.decode = !requestSchema(p.key).empty() || !responseSchema(p.key).empty();
    // ApiVersions newer than the tables: its answer goes uncapped (a later request of a version beyond the
    // tables is caught then). Set-up and admin keys: only the answer's correlation id is checked.
    if (p.key == api::kApiVersions && p.version > a.maxVersion)
      p.decode = false;
    if (!p.decode) {
      outstanding_.push_back(std::move(p));
      return d;
    }
    if (p.version > a.maxVersion)
      return proxy::Decode::Invalid; // a layout the tables do not know
    if (requestHeaderVersion(a, p.version) >= 1) // client id: a classic nullable string even in header v2
      clientId_ = std::string(r.string(false).value_or(""));
    if (requestHeaderVersion(a, p.version) >= 2)
      r.skipTags();
    if (r.failed())
      return proxy::Decode::Invalid;
    if (a.role != ApiRole::Step) {
      outstanding_.push_back(std::move(p));
      return d;
    }
    RequestFacts facts;
    const size_t bodyAt = 4 + r.pos();
    if (!readRequest(p.key, p.version, r.rest(), names_, facts))
      return proxy::Decode::Invalid;
    if (p.key == api::kFetch)
      capFetchWait(buf.substr(0, out.size), bodyAt, p.version, facts, out);
    if (facts.noResponse) // acks=0: nothing will end it, so it is no step
      return d;
    learn(facts.group, facts.member, facts.generation);
    joinAsked_ = joinAsked_ || p.key == api::kJoinGroup;
    if (p.key == api::kFetch)
      p.positions = sessionPositions(facts);
    if (p.key == api::kSyncGroup && options_.lateSyncRejoins) rememberSync(r.rest(), p);
    if (facts.txnId && (p.key == api::kTxnOffsetCommit || p.key == api::kEndTxn || p.key == api::kInitProducerId))
      transactional(p, facts);
    p.step = true;
    outstanding_.push_back(std::move(p));
    out.kind = proxy::ClientMsg::Kind::RequestEnd;
    out.step.verb = a.verb;
    out.step.detail = std::move(facts.detail);
    out.step.acked = std::move(facts.committed);
    out.step.blocking = facts.blocking;
    out.step.waitMs = facts.waitMs;
    out.step.read = p.key == api::kFetch;
    out.step.keepAlive = p.key == api::kHeartbeat;
    return d;
  }

  proxy::Decode onServer(std::string_view buf, proxy::ServerMsg& out) override {
    out = proxy::ServerMsg{};
    const proxy::Decode d = frame(buf, 4, out.size);
    if (d != proxy::Decode::Message)
      return d;
    Reader r(buf.substr(4, out.size - 4));
    const int32_t correlation = r.int32();
    if (outstanding_.empty() || outstanding_.front().correlation != correlation)
      return proxy::Decode::Invalid; // an answer to no request, or out of order
    const Pending p = std::move(outstanding_.front());
    outstanding_.pop_front();
    const ApiInfo a = apiInfo(p.key);
    if (!p.decode || responseSchema(p.key).empty())
      return d; // Pass
    if (responseHeaderVersion(a, p.version) >= 1)
      r.skipTags();
    if (r.failed())
      return proxy::Decode::Invalid;
    const std::string_view header = buf.substr(4, r.pos());
    std::string patched;
    const std::string_view body = lateSyncRejoins(p, header, r.rest(), patched, out);
    if (!rewrite(p, header, body, out))
      return proxy::Decode::Invalid;
    if (!p.step)
      return d; // Pass (with its replacement, if any)
    ResponseFacts facts;
    if (!readResponse(p.key, p.version, body, p.positions, names_, facts) || !facts.undecoded.empty())
      return proxy::Decode::Invalid; // records it cannot read: none of them may go unseen
    learn(std::nullopt, facts.member, facts.generation);
    if (p.txnId && facts.reply.error) takeBack(*p.txnId, p.txnAdded);
    out.kind = proxy::ServerMsg::Kind::ReplyEnd;
    out.reply = std::move(facts.reply);
    return d;
  }

  /// A transaction's offsets acknowledge when it commits: a TxnOffsetCommit's positions wait under its
  /// transactional id, and the EndTxn that commits it acknowledges them (its answer, as any step's, must
  /// carry no error). An EndTxn that aborts drops them, and so does an InitProducerId of that id: the
  /// coordinator aborts the open transaction of a producer another one replaced (a killed consumer's).
  void transactional(Pending& p, RequestFacts& facts) {
    std::lock_guard<std::mutex> lock(options_.txnOffsets->mu);
    auto& byTxn = options_.txnOffsets->byTxn;
    if (p.key == api::kTxnOffsetCommit) {
      auto& waiting = byTxn[*facts.txnId];
      waiting.insert(waiting.end(), facts.committed.begin(), facts.committed.end());
      p.txnId = facts.txnId;
      p.txnAdded = std::move(facts.committed);
      facts.committed.clear();
      return;
    }
    auto it = byTxn.find(*facts.txnId);
    if (it == byTxn.end()) return;
    if (p.key == api::kEndTxn && facts.endCommits) facts.committed = std::move(it->second);
    byTxn.erase(it);
  }

  /// A TxnOffsetCommit the coordinator refused: its positions are not the transaction's.
  void takeBack(const std::string& txnId, const std::vector<std::string>& added) {
    std::lock_guard<std::mutex> lock(options_.txnOffsets->mu);
    auto it = options_.txnOffsets->byTxn.find(txnId);
    if (it == options_.txnOffsets->byTxn.end()) return;
    auto& waiting = it->second;
    for (const auto& a : added)
      if (auto w = std::find(waiting.begin(), waiting.end(), a); w != waiting.end()) waiting.erase(w);
  }

  void withdrawLast() override {
    if (!outstanding_.empty())
      outstanding_.pop_back();
  }

  bool joinAsked() const { return joinAsked_; }

  std::optional<Membership> membership() const {
    if (!membership_.group.empty() && !membership_.member.empty())
      return membership_;
    return std::nullopt;
  }

private:
  /// What a group request or a JoinGroup answer says of the member (an empty member id — a JoinGroup
  /// before the coordinator assigned one — says nothing).
  void learn(const std::optional<std::string>& group, const std::optional<std::string>& member,
             const std::optional<int64_t>& generation) {
    if (group) membership_.group = *group;
    if (member && !member->empty()) membership_.member = *member;
    if (generation && *generation >= 0) membership_.generation = static_cast<int32_t>(*generation);
    membership_.clientId = clientId_;
  }

  /// A Fetch's positions: those it names, and for the partitions an incremental fetch (a fetch session)
  /// leaves out, the last ones it named on this connection.
  std::map<TopicPartition, int64_t> sessionPositions(const RequestFacts& f) {
    for (const auto& tp : f.forgotten)
      session_.erase(tp);
    for (const auto& [tp, offset] : f.fetchOffsets)
      session_[tp] = offset;
    return session_;
  }

  /// With TrackerOptions::fetchWaitCapMs, a Fetch that asks a longer max wait is forwarded asking the cap
  /// (`frame`: the whole request; `bodyAt`: where its body starts). MaxWaitMs follows ReplicaId (an int32)
  /// up to v14 and leads the body from v15; tagged fields come last, so flexible versions place it alike.
  void capFetchWait(std::string_view frame, size_t bodyAt, int16_t version, RequestFacts& facts,
                    proxy::ClientMsg& out) const {
    const int32_t cap = options_.fetchWaitCapMs;
    if (cap <= 0 || facts.waitMs <= cap) return;
    const size_t at = bodyAt + (version <= 14 ? 4 : 0);
    if (at + 4 > frame.size() || Reader(frame.substr(at, 4)).int32() != facts.waitMs)
      return; // not where the layout puts it: forwarded as it is
    Writer w;
    w.int32(cap);
    out.replacement = std::string(frame);
    out.replacement.replace(at, 4, w.out);
    const std::string asked = " max wait " + std::to_string(facts.waitMs) + " ms";
    if (const auto pos = facts.detail.find(asked); pos != std::string::npos)
      facts.detail.replace(pos, asked.size(), " max wait " + std::to_string(cap) + " ms (asked " +
                                                  std::to_string(facts.waitMs) + ")");
    facts.waitMs = cap;
  }

  /// Forwards `body` after `header` in place of the broker's response.
  static void replace(std::string_view header, std::string_view body, proxy::ServerMsg& out) {
    std::string frameBody(header);
    frameBody += body;
    out.replacement = framed(frameBody);
  }

  /// A SyncGroup request (TrackerOptions::lateSyncRejoins): who asks, kept with it, and a leader's
  /// assignments, kept for every connection of the broker.
  void rememberSync(std::string_view body, Pending& p) const {
    SyncAsk ask;
    std::vector<std::pair<std::string, std::string>> given;
    if (!readSyncGroup(body, p.version, ask, given)) return;
    if (options_.syncAssignments && !given.empty()) {
      std::lock_guard<std::mutex> lock(options_.syncAssignments->mu);
      auto& m = options_.syncAssignments->byMember;
      // Only the latest generation of a group is ever asked for again.
      for (auto it = m.begin(); it != m.end();)
        it = std::get<0>(it->first) == ask.group && std::get<1>(it->first) < ask.generation ? m.erase(it) : std::next(it);
      for (auto& [member, assignment] : given) m[{ask.group, ask.generation, member}] = std::move(assignment);
    }
    p.sync = std::move(ask);
  }

  /// The assignment a leader's SyncGroup gave this request's member in its generation, if any.
  std::optional<std::string> assignmentFor(const Pending& p) const {
    if (!p.sync || !options_.syncAssignments) return std::nullopt;
    std::lock_guard<std::mutex> lock(options_.syncAssignments->mu);
    const auto& m = options_.syncAssignments->byMember;
    const auto it = m.find({p.sync->group, p.sync->generation, p.sync->member});
    if (it == m.end()) return std::nullopt;
    return it->second;
  }

  /// With TrackerOptions::lateSyncRejoins, a SyncGroup answered INVALID_REQUEST is forwarded with the
  /// member's assignment from its leader's SyncGroup (as a real coordinator answers it), else as
  /// REBALANCE_IN_PROGRESS: returns the body the client gets (in `patched` when changed), which the step reads.
  std::string_view lateSyncRejoins(const Pending& p, std::string_view header, std::string_view body,
                                   std::string& patched, proxy::ServerMsg& out) const {
    if (!options_.lateSyncRejoins || p.key != api::kSyncGroup) return body;
    Reader r(body);
    if (p.version >= 1) r.int32(); // ThrottleTimeMs
    const size_t at = r.pos();
    if (r.int16() != kInvalidRequest || r.failed()) return body;
    if (auto assignment = assignmentFor(p)) {
      const bool compact = p.version >= 4;
      Writer w;
      if (p.version >= 1) w.int32(0); // ThrottleTimeMs
      w.int16(0);                     // no error
      if (p.version >= 5) {
        w.string(p.sync->protocolType, compact);
        w.string(p.sync->protocolName, compact);
      }
      w.bytes(*assignment, compact);
      if (compact) w.noTags();
      patched = std::move(w.out);
      replace(header, patched, out);
      return patched;
    }
    Writer code;
    code.int16(kRebalanceInProgress);
    patched = std::string(body);
    patched.replace(at, 2, code.out);
    replace(header, patched, out);
    return patched;
  }

  /// Responses that carry broker addresses or API versions: forwarded rewritten when that changes them.
  bool rewrite(const Pending& p, std::string_view header, std::string_view body, proxy::ServerMsg& out) {
    const bool addresses = p.key == api::kMetadata || p.key == api::kFindCoordinator ||
                           (p.key == api::kFetch && p.version >= 16) || (p.key == api::kProduce && p.version >= 10);
    if (!addresses && p.key != api::kApiVersions)
      return true;
    const RewriteResult res = rewriteResponse(p.key, p.version, body, options_.addressFor, options_.capVersions, names_);
    if (!res.ok)
      return false;
    if (const auto it = res.maxVersions.find(api::kLeaveGroup); it != res.maxVersions.end())
      membership_.leaveVersion = std::min<int16_t>(it->second, apiInfo(api::kLeaveGroup).maxVersion);
    if (res.body) replace(header, *res.body, out);
    return true;
  }

  TrackerOptions options_;
  std::deque<Pending> outstanding_;
  std::map<TopicPartition, int64_t> session_;
  TopicNames names_;
  std::string clientId_;
  Membership membership_;
  bool joinAsked_ = false;
};

} // namespace

proxy::TrackerPtr makeTracker(TrackerOptions options) { return std::make_unique<KafkaTracker>(std::move(options)); }

std::optional<Membership> membershipOf(const proxy::Tracker& tracker) {
  const auto* k = dynamic_cast<const KafkaTracker*>(&tracker);
  return k ? k->membership() : std::nullopt;
}

bool askedToJoin(const proxy::Tracker& tracker) {
  const auto* k = dynamic_cast<const KafkaTracker*>(&tracker);
  return k && k->joinAsked();
}

} // namespace idem::kafka
