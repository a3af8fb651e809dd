/// Shape -> Schedule: a pure function, so that a shape, its shrinks and the schedule file agree.
#include "search/model.h"

#include "plan/fault_kind.h"

#include "scenario/decodable.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace idem {

namespace {

std::vector<Event> eventsOf(const Shape& s, const Scenario& sc) {
  int keys = std::clamp<int>(s.keys, 1, std::max<int>(1, sc.keys.size()));
  std::vector<Event> events;
  for (size_t i = 0; i < s.events.size(); ++i) {
    Event e;
    e.n = static_cast<int>(i) + 1;
    size_t d = 0;
    for (const auto& f : sc.fields) {
      if (f.gen != "key" && f.gen != "int" && f.gen != "pick") continue;
      int64_t v = d < s.events[i].draws.size() ? s.events[i].draws[d] : 0;
      ++d;
      if (f.gen == "key") e.fields[f.name] = sc.keys.empty() ? "" : sc.keys[static_cast<size_t>(std::abs(v) % keys)];
      else if (f.gen == "int") e.fields[f.name] = std::to_string(std::clamp(v, f.min, f.max));
      else e.fields[f.name] = f.values.empty() ? "" : f.values[static_cast<size_t>(std::abs(v)) % f.values.size()];
    }
    events.push_back(std::move(e));
  }
  completeEvents(sc, events);
  return events;
}

/// Phase-1 originals in event order, except that each key's events of a versioned scenario take the
/// slots of that key in the order of their sort keys.
std::vector<int> originals(const Shape& s, const Scenario& sc, const std::vector<Event>& events) {
  std::vector<int> order;
  for (const auto& e : events) order.push_back(e.n);
  std::string by = versionKeyField(sc);
  if (by.empty()) return order;
  std::map<std::string, std::vector<int>> slots; // key -> positions (ascending)
  for (size_t i = 0; i < events.size(); ++i) {
    auto it = events[i].fields.find(by);
    slots[it == events[i].fields.end() ? "" : it->second].push_back(static_cast<int>(i));
  }
  for (auto& [key, pos] : slots) {
    std::vector<int> members = pos;
    std::stable_sort(members.begin(), members.end(),
                     [&](int a, int b) { return s.events[a].order < s.events[b].order; });
    for (size_t j = 0; j < pos.size(); ++j) order[pos[j]] = events[members[j]].n;
  }
  return order;
}

/// Kill point `p` as the fault of draw `k`'s kind (ModelParams::faultKinds): an error acts before its step,
/// a forget after it, a delay lasts `p.delayMs`, a restart restarts the step's server; a pause names no time
/// (the broker's hand-over time; on an HTTP server kHttpPauseMs).
void withKind(Fault& p, const Shape::Kill& k, const KillModel& km, const ModelParams& params) {
  if (!params.faultKinds.empty()) p.kind = params.faultKinds[static_cast<size_t>(std::abs(k.kind)) % params.faultKinds.size()];
  if (p.kind == "error") p.when = When::Before;
  if (p.kind == "forget") p.when = When::After;
  if (p.kind == "delay") p.args = {std::to_string(params.delayMs)};
  if (p.kind == "delay" && k.pastLease && params.leaseMs > 0) p.args = {std::to_string(params.leaseMs + kPastLeaseMs)};
  if (p.kind == "delay" && k.pastLease && params.callTimeoutMs > 0 && km.server(p.verb) == "sink")
    p.args = {std::to_string(params.callTimeoutMs + kPastLeaseMs)};
  if (p.kind == "delay" && k.slowWork) p.args = {std::to_string(params.slowWorkMs)};
  if (p.kind == "restart") {
    // The server of the step; at a call to the sink (idemproof's own server, nothing of the target's to
    // restart) PostgreSQL restarts while the call is out.
    const std::string server = km.server(p.verb);
    p.args = {server == "sink" ? "pg" : server};
  }
}

/// HTTP: the requests of a shape. Keys are numbered in the order of their first use; the payload of a
/// mismatch, of a request without a key or with a malformed one is an event of its own, sent under no key
/// of its own (a payload belongs to one key). A mismatch needs a key used before: on a fresh key it is an
/// original. Fault points are bounded by the steps of as many executed requests as there are keys; their
/// kinds are drawn as for consumers (withKind).
Schedule materializeHttp(const Shape& s, const Scenario& sc, const KillModel& km, uint64_t seed, const ModelParams& params) {
  Schedule out;
  out.scenario = sc.name;
  out.seed = seed;
  out.replicas = std::clamp(s.replicas, 1, kMaxReplicas);
  std::vector<Event> payloads = eventsOf(s, sc);
  if (payloads.empty()) payloads.push_back(Event{1, {}});
  const int n = static_cast<int>(payloads.size());
  std::map<int, int> keyEvent; // payload index -> event number
  auto event = [&](int index) {
    Event e = payloads[static_cast<size_t>(index % n)];
    e.n = static_cast<int>(out.events.size()) + 1;
    out.events.push_back(e);
    return e.n;
  };
  auto key = [&](int draw) {
    int i = std::abs(draw) % n;
    auto it = keyEvent.find(i);
    return it != keyEvent.end() ? it->second : keyEvent[i] = event(i);
  };
  static const ClientOp::Wait waits[] = {ClientOp::Wait::Answer, ClientOp::Wait::Timeout, ClientOp::Wait::CutRequest,
                                         ClientOp::Wait::CutHeaders, ClientOp::Wait::CutBody};
  static const char* malformed[] = {"empty", "token", "unterminated"};
  const bool opaque = sc.http && sc.http->keyFormat == "opaque";
  std::set<int> used;
  std::set<int> executing; // replicas that get a fresh key's first request
  for (const auto& r : s.requests) {
    ClientOp op;
    switch (std::abs(r.kind) % 4) {
    case 0:
      op.kind = ClientOp::Kind::Send;
      op.key = op.body = key(r.key);
      if (r.mismatch && used.count(op.key)) op.body = event(std::abs(r.key) + 1);
      op.wait = waits[std::abs(r.wait) % 5];
      // After the retention: only a key used before, and only when the wait is short enough to draw.
      op.afterRetention = r.late && op.body == op.key && used.count(op.key) && sc.http && sc.http->policy.retentionMs <= 2000;
      break;
    case 1:
      op.kind = ClientOp::Kind::Burst;
      op.key = op.body = key(r.key);
      op.copies = std::clamp(r.copies, 2, std::clamp(params.maxBurst, 2, kMaxBurst));
      if (r.mismatch) op.other = event(std::abs(r.key) + 1);
      break;
    default:
      op.kind = std::abs(r.kind) % 4 == 2 ? ClientOp::Kind::NoKey : ClientOp::Kind::BadKey;
      op.key = 0;
      op.body = event(std::abs(r.key));
      // An opaque key is any non-empty value: only an empty one is malformed.
      op.malformed = opaque ? "empty" : malformed[std::abs(r.malformed) % 3];
      break;
    }
    if (out.replicas > 1) { // the request's route (Shape::routes)
      const size_t i = out.client.size();
      const int64_t route = i < s.routes.size() ? std::abs(s.routes[i]) : 0;
      const int replica = static_cast<int>(route % 3) % out.replicas + 1;
      op.replica = replica == 1 ? 0 : replica;
      op.split = op.kind == ClientOp::Kind::Burst && route >= 3;
    }
    // The replicas a fresh key's own payload reaches: each executes one request's work there.
    if (op.key && op.body == op.key && !used.count(op.key))
      for (int c = 1; c <= (op.kind == ClientOp::Kind::Burst ? op.copies : 1); ++c) executing.insert(op.replicaOf(c, out.replicas));
    if (op.key) used.insert(op.key);
    out.client.push_back(op);
  }
  const int keys = static_cast<int>(std::max<size_t>(1, used.size()));
  if (!km.empty()) {
    for (const auto& k : s.kills) {
      const auto& verb = km.verbs()[static_cast<size_t>(std::abs(k.verb)) % km.verbs().size()];
      int bound = km.bound(verb, keys);
      if (bound < 1) continue;
      Fault p = Fault::kill(k.before ? When::Before : When::After, verb, 1 + (std::max(1, k.k) - 1) % bound);
      withKind(p, k, km, params);
      bool taken = std::any_of(out.faults.begin(), out.faults.end(), [&](const Fault& q) { return q.verb == p.verb && q.k == p.k; });
      if (!taken) out.faults.push_back(p);
    }
    // Holds between replicas: one of the replicas that execute a fresh key's request, held at a step of one
    // request's work (a point it reaches), released by the others' idleness or at the next replica's point of
    // a step that can conflict with the held one.
    const std::vector<int> held(executing.begin(), executing.end());
    for (const auto& h : out.replicas > 1 && !held.empty() ? s.holds : std::vector<Shape::Hold>{}) {
      const auto& verb = km.verbs()[static_cast<size_t>(std::abs(h.verb)) % km.verbs().size()];
      const int bound = km.bound(verb, 1);
      if (bound < 1) continue;
      const int process = held[static_cast<size_t>(std::abs(h.process)) % held.size()];
      Fault f = Fault::kill(h.before ? When::Before : When::After, verb, 1 + (std::max(1, h.k) - 1) % bound);
      f.kind = "hold";
      f.process = "s" + std::to_string(process);
      const std::vector<std::string> conflicting = km.conflicting(verb);
      if (std::abs(h.release) % 3 == 2 && !conflicting.empty()) {
        const int other = 1 + (process - 1 + 1 + std::abs(h.other) % (out.replicas - 1)) % out.replicas;
        const auto& uverb = conflicting[static_cast<size_t>(std::abs(h.untilVerb)) % conflicting.size()];
        f.args = {"s" + std::to_string(other), h.untilBefore ? "before" : "after",
                  uverb + "#" + std::to_string(1 + (std::max(1, h.untilK) - 1) % std::max(1, km.bound(uverb, 1)))};
      }
      bool taken = std::any_of(out.faults.begin(), out.faults.end(), [&](const Fault& q) { return q.samePoint(f); });
      if (!taken) out.faults.push_back(f);
    }
  }
  return out;
}

} // namespace

Schedule materialize(const Shape& s, const Scenario& sc, const KillModel& km, uint64_t seed, const ModelParams& params) {
  if (sc.http) return materializeHttp(s, sc, km, seed, params);
  Schedule out;
  out.scenario = sc.name;
  out.seed = seed;
  out.events = eventsOf(s, sc);
  poisonGenerated(sc, out.events); // the scenario's poison events among the others (poison.every)
  std::vector<int> phase1 = originals(s, sc, out.events);
  std::map<int, std::vector<std::tuple<int, int, int, bool>>> later; // phase -> (offset, serial, event, inflight)
  std::vector<StreamEntry> first;
  for (int n : phase1) first.push_back({n, 1});
  int serial = 0;
  for (size_t i = 0; i < s.events.size(); ++i) {
    int n = static_cast<int>(i) + 1;
    for (const auto& r : s.events[i].retries) {
      if (r.phase <= 1) {
        auto pos = static_cast<size_t>(std::find_if(first.begin(), first.end(), [&](const StreamEntry& e) { return e.event == n; }) -
                                       first.begin());
        size_t span = first.size() - pos;
        first.insert(first.begin() + static_cast<long>(pos + 1 + static_cast<size_t>(std::abs(r.offset)) % span),
                     StreamEntry{n, 1, r.inflight});
      } else {
        later[r.phase].emplace_back(r.offset, serial++, n, r.inflight);
      }
    }
  }
  out.stream = first;
  int phase = 1;
  for (auto& [p, entries] : later) { // renumbered 2, 3, ... whatever phases were drawn
    std::sort(entries.begin(), entries.end());
    ++phase;
    for (const auto& [offset, ser, n, inflight] : entries) out.stream.push_back({n, phase, inflight});
  }
  int n = static_cast<int>(out.events.size());
  out.consumers = std::clamp(s.consumers, 1, kMaxConsumers);
  const bool several = out.consumers > 1;
  // With several consumers, c1 alone gets the stream's first batch (up to the first entry that waits).
  int firstBatch = 0;
  {
    std::set<int> distinct;
    for (size_t i = 0; i < out.stream.size() && (i == 0 || (out.stream[i].phase == 1 && !out.stream[i].inflight)); ++i)
      distinct.insert(out.stream[i].event);
    firstBatch = static_cast<int>(distinct.size());
  }
  // The process of a draw and the bound of its k: c1 does the first batch's work, any other one at least
  // one event's (a point it never reaches is coverage loss).
  auto processOf = [&](int draw) { return several ? 1 + std::abs(draw) % out.consumers : 0; };
  auto boundOf = [&](const std::string& verb, int process) {
    return process == 0 ? km.bound(verb, n) : km.bound(verb, process == 1 ? firstBatch : 1);
  };
  auto label = [](int process) { return process == 0 ? std::string() : "c" + std::to_string(process); };
  // A target with an outbox relay: a fault's process may be r1 too, one draw in consumers + 1, its verb and k
  // from the relay's own model (its steps are numbered apart: plan/fault.h).
  const KillModel* relay = km.relay() && !km.relay()->empty() ? km.relay() : nullptr;
  auto atRelay = [&](int draw) { return relay && std::abs(draw) % (out.consumers + 1) == out.consumers; };
  if (!km.empty()) {
    for (const auto& k : s.kills) {
      const bool r1 = atRelay(k.process);
      const KillModel& model = r1 ? *relay : km;
      const auto& verb = model.verbs()[static_cast<size_t>(std::abs(k.verb)) % model.verbs().size()];
      int process = r1 ? 0 : processOf(k.process);
      int bound = r1 ? relay->bound(verb, n) : boundOf(verb, process);
      if (bound < 1) continue;
      Fault p = Fault::kill(k.before ? When::Before : When::After, verb, 1 + (std::max(1, k.k) - 1) % bound);
      p.process = r1 ? "r1" : label(process);
      withKind(p, k, model, params);
      // One point per step: before:V#k withholds the step that after:V#k waits for.
      bool taken = std::any_of(out.faults.begin(), out.faults.end(),
                               [&](const Fault& q) { return q.process == p.process && q.verb == p.verb && q.k == p.k; });
      if (!taken) out.faults.push_back(p);
    }
    for (const auto& h : several ? s.holds : std::vector<Shape::Hold>{}) {
      const auto& verb = km.verbs()[static_cast<size_t>(std::abs(h.verb)) % km.verbs().size()];
      int process = processOf(h.process);
      int bound = boundOf(verb, process);
      if (bound < 1) continue;
      Fault f = Fault::kill(h.before ? When::Before : When::After, verb, 1 + (std::max(1, h.k) - 1) % bound);
      f.kind = "hold";
      f.process = label(process);
      int release = std::abs(h.release) % 3;
      // Released at another process's point only where that step can conflict with the held one (the same
      // table, the stream, a COMMIT): a point on unrelated work orders nothing, and the race it left open
      // would replay differently. With none, by the others' idleness.
      const std::vector<std::string> conflicting = km.conflicting(verb);
      if (release == 2 && conflicting.empty()) release = 0;
      if (release == 1) f.args = {std::to_string(std::max(1, params.holdMs))};
      if (release == 2) {
        int other = 1 + (process - 1 + 1 + std::abs(h.other) % (out.consumers - 1)) % out.consumers;
        const auto& uverb = conflicting[static_cast<size_t>(std::abs(h.untilVerb)) % conflicting.size()];
        int ubound = std::max(1, boundOf(uverb, other));
        f.args = {label(other), h.untilBefore ? "before" : "after",
                  uverb + "#" + std::to_string(1 + (std::max(1, h.untilK) - 1) % ubound)};
      }
      bool taken = std::any_of(out.faults.begin(), out.faults.end(),
                               [&](const Fault& q) { return q.process == f.process && q.verb == f.verb && q.k == f.k; });
      if (!taken) out.faults.push_back(f);
    }
  }
  out.restart = s.sameName ? RestartStyle::SameName : RestartStyle::NewName;
  // Several consumers add applications no fault stands for: a claim of what a live process still works
  // on, a copy sent in flight to another process. Values decodable for that many more.
  int extra = out.consumers > 1 ? out.consumers + out.inflight() : 0;
  out.values = makeDecodable(sc, out, applicationWeight(out.faults) + extra);
  return out;
}

} // namespace idem
