/// The classes of a comparison: kill points grouped by the gap between two steps of a consumer, and the
/// generated classes (retries, late retries, reordered streams).
#include "driver/compare.h"

#include "core/random.h"
#include "history/trace.h"
#include "plan/fault_kind.h"

#include <fmt/format.h>

#include "checkers/holds.h"
#include "driver/commands.h"
#include "search/model.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>

namespace idem::compare {

namespace {

/// A verb in a class's label: the sink's CALL (docs/sink.md) as what it is to the consumer, "the call (sink)";
/// the others as they are ("COMMIT").
std::string verbWords(const std::string& verb) { return verb == "CALL" ? "the call (sink)" : verb; }

Class gapClass(const std::string& prev, const std::string& next) {
  Class c;
  c.kind = "kill";
  c.id = fmt::format("kill:{}>{}", prev.empty() ? "start" : prev, next.empty() ? "end" : next);
  if (prev.empty()) c.label = fmt::format("at start, before {}", verbWords(next));
  else if (next.empty()) c.label = fmt::format("after {}, at the end", verbWords(prev));
  else c.label = fmt::format("after {}, before {}", verbWords(prev), verbWords(next));
  std::vector<std::string> points;
  if (!prev.empty()) points.push_back(fmt::format("after:{}#k", prev));
  if (!next.empty()) points.push_back(fmt::format("before:{}#k", next));
  c.description = points.size() == 2 ? points[0] + ", " + points[1] : points[0];
  return c;
}

/// The class of a fault other than a kill: its kind's (FaultKind::sweepClass).
Class faultClass(const Fault& f) {
  const FaultClass k = faultKind(f.kind, "--faults").sweepClass(f);
  Class c;
  c.kind = "fault";
  c.id = k.id;
  c.label = k.label;
  c.description = k.description;
  return c;
}

} // namespace

std::vector<std::string> defaultFaultKinds(const CommonArgs& args) {
  std::vector<std::string> out{"drop", "delay", "error", "forget"};
  // Ageing moves every key's TTL in the Valkey database: only in the embedded servers, one per worker.
  if (args.databaseUrl.empty()) out.push_back("age");
  if (!args.userServers()) out.push_back("restart");
  return out;
}

std::vector<ClassedPoint> classifyFaultPoints(const std::vector<Op>& history, const std::vector<std::string>& kinds,
                                              int delayMs) {
  std::vector<std::string> others;
  for (const auto& k : kinds)
    if (k != "kill") others.push_back(k);
  std::vector<ClassedPoint> out;
  for (const auto& p : traceOf(history).points) {
    for (auto& f : faultsAt(p, others, delayMs)) {
      ClassedPoint c;
      c.cls = faultClass(f);
      c.fault = std::move(f);
      c.server = p.server;
      c.detail = p.detail;
      c.opIndex = p.opIndex;
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::vector<ClassedPoint> classifyPastLeasePoints(const std::vector<Op>& history, int delayMs) {
  std::vector<ClassedPoint> out;
  for (const auto& p : traceOf(history).points) {
    if (p.fault.when != When::Before || p.fault.k != 1) continue;
    for (auto& f : faultsAt(p, {"delay"}, delayMs)) {
      ClassedPoint c;
      c.cls = {"delay-past-lease", "fault", "delayed past the lease (client timed out)",
               fmt::format("delay:before:VERB#1:{}: the first request's step waits the declared lease and {} ms more "
                           "while its client, timed out, retries",
                           delayMs, kPastLeaseMs)};
      c.fault = std::move(f);
      c.server = p.server;
      c.detail = p.detail;
      out.push_back(std::move(c));
    }
  }
  return out;
}

namespace {

/// A PostgreSQL statement on a table of the user's (not a pg_ catalog): the consumer's work on the data, not
/// a driver's connection set-up.
bool onUserData(const ProcessStep& p) {
  return p.step->server == "pg" && std::any_of(p.step->tables.begin(), p.step->tables.end(), [](const std::string& t) {
           return t.rfind("pg_", 0) != 0;
         });
}

} // namespace

std::vector<ClassedPoint> classifySlowWorkPoints(const std::vector<Op>& history) {
  const auto steps = processSteps(history, "c1");
  std::set<std::string> acked;
  auto batch = steps.end();
  for (auto it = steps.begin(); it != steps.end() && batch == steps.end(); ++it) {
    if (!workStep(*it->step) || it->step->acked.empty()) continue;
    size_t fresh = 0;
    for (const auto& e : it->step->acked) fresh += acked.insert(e).second ? 1 : 0;
    if (fresh >= 2) batch = it;
  }
  if (batch == steps.end()) return {};
  const std::string ackVerb = batch->step->verb;
  const Class cls{"slow:ack", "fault", "slow work past an acknowledgement",
                  fmt::format("delay:c1:before:VERB#k:{} at a statement of c1's work before it acknowledged several "
                              "entries at once, then c1 killed after its next acknowledgement ({}): one on a timer or of "
                              "a batch that covers an entry still in work loses it",
                              kSlowWorkMs, ackVerb)};
  std::vector<ClassedPoint> out;
  int acks = 0;     // c1's acknowledgements of that verb so far (their k)
  bool delivered = false;
  for (auto it = steps.begin(); it != batch; ++it) {
    if (!workStep(*it->step)) continue;
    delivered = delivered || !it->step->delivered.empty();
    if (it->step->verb == ackVerb) acks = it->k;
    if (!delivered || !onUserData(*it)) continue;
    ClassedPoint c;
    c.fault = it->fault("delay", When::Before);
    c.fault.args = {std::to_string(kSlowWorkMs)};
    Fault kill = Fault::kill(When::After, ackVerb, acks + 1);
    kill.process = "c1";
    c.also = {kill};
    c.cls = cls;
    c.server = it->step->server;
    c.detail = it->step->detail;
    c.opIndex = it->op->index;
    out.push_back(std::move(c));
  }
  return out;
}

Schedule pastLeaseSchedule(Schedule s) {
  for (auto& c : s.client)
    if (c.kind == ClientOp::Kind::Send) {
      c.wait = ClientOp::Wait::Timeout;
      break;
    }
  return s;
}

std::vector<ClassedPoint> classifyKillPoints(const std::vector<Op>& history, bool startOnce) {
  // Each process's first read that delivered an entry (Op::index).
  std::map<std::string, int64_t> firstDelivery;
  if (startOnce)
    for (const auto& [op, step] : recordsOf<ops::Step>(history))
      if (!step->delivered.empty() && !firstDelivery.count(op->process)) firstDelivery[op->process] = op->index;
  std::vector<ClassedPoint> out;
  for (const auto& p : traceOf(history).points) {
    ClassedPoint c;
    c.fault = p.fault;
    auto first = firstDelivery.find(p.process);
    if (first != firstDelivery.end() &&
        (p.opIndex < first->second || (p.opIndex == first->second && p.fault.when == When::Before))) {
      c.cls = {"kill:start>delivery", "kill", "before the first delivery",
               "a kill point before the process's first read that delivered an entry: set-up, no entry in hand"};
    } else {
      c.cls = p.fault.when == When::Before ? gapClass(p.prevVerb, p.fault.verb) : gapClass(p.fault.verb, p.nextVerb);
    }
    c.server = p.server;
    c.detail = p.detail;
    c.opIndex = p.opIndex;
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<ClassedPoint> sampleCentered(const std::vector<ClassedPoint>& points, int n) {
  if (n <= 0 || points.size() <= static_cast<size_t>(n)) return points;
  std::vector<ClassedPoint> out;
  for (int j = 0; j < n; ++j) out.push_back(points[((2 * j + 1) * points.size()) / (2 * static_cast<size_t>(n))]);
  return out;
}

std::vector<ClassedPoint> sample(const std::vector<ClassedPoint>& points, int n) {
  if (n <= 0 || points.size() <= static_cast<size_t>(n)) return points;
  if (n == 1) return {points.front()};
  std::vector<ClassedPoint> out;
  for (int j = 0; j < n; ++j) out.push_back(points[(j * (points.size() - 1) + (n - 1) / 2) / (n - 1)]);
  return out;
}

std::vector<Generated> generatedClasses(const Scenario& sc, int runs, int events, uint64_t seed) {
  std::vector<Generated> out(3);
  out[0].cls = {"retry", "retry", "retries",
                fmt::format("{} generated schedules of {} events (seeds {}…), event 2 sent twice", runs, events, seed)};
  out[1].cls = {"late-retry", "retry", "late retries",
                fmt::format("the same schedules, the second copy of event 2 sent only after the first was acknowledged")};
  out[2].cls = {"reorder", "reorder", "reordered stream",
                fmt::format("the same schedules with the stream entries shuffled (events arrive out of order)")};
  for (int i = 0; i < runs; ++i) {
    uint64_t s = seed + static_cast<uint64_t>(i);
    Schedule base = generatedSchedule(sc, events, s);
    out[0].schedules.push_back(base);
    Schedule late = base;
    if (late.stream.size() > static_cast<size_t>(events)) late.stream.back().phase = 2;
    out[1].schedules.push_back(late);
    Schedule shuffled = base;
    Rng rng(s ^ 0x5eed5eedULL);
    auto before = shuffled.stream;
    rng.shuffle(shuffled.stream);
    bool same = std::equal(before.begin(), before.end(), shuffled.stream.begin(),
                           [](const StreamEntry& a, const StreamEntry& b) { return a.event == b.event; });
    if (same) std::reverse(shuffled.stream.begin(), shuffled.stream.end());
    out[2].schedules.push_back(shuffled);
  }
  if (sc.poison && events > 0) {
    // Poison events: the retry class's schedules with their last event made poison (the scenario's values),
    // sent among the others as the default schedule sends its own.
    Generated poison;
    poison.cls = {"poison", "poison", "poison event",
                  fmt::format("the retry class's schedules with event {} made poison ({}): dead-lettered once, "
                              "delivered at most {} times, the others applied",
                              events, "the scenario's poison values", sc.poison->maxDeliveries)};
    for (Schedule s : out[0].schedules) {
      for (auto& e : s.events)
        if (e.n == events)
          for (const auto& [name, value] : sc.poison->fields) e.fields[name] = value;
      poison.schedules.push_back(std::move(s));
    }
    out.push_back(std::move(poison));
  }
  return out;
}

std::vector<Generated> httpClasses(const Scenario& sc, int runs, uint64_t seed) {
  using K = ClientOp::Kind;
  using W = ClientOp::Wait;
  auto send = [](int key, int body = 0, W w = W::Answer) { return ClientOp{K::Send, w, key, body ? body : key}; };
  auto burst = [](int key, int copies, int other = 0) {
    ClientOp c{K::Burst, W::Answer, key, key, copies, other};
    return c;
  };
  auto bad = [](int body, const char* how) {
    ClientOp c{K::BadKey, W::Answer, 0, body};
    c.malformed = how;
    return c;
  };
  const bool sf = sc.http && sc.http->keyFormat == "sf-string";
  std::vector<ClientOp> noKey{send(1), {K::NoKey, W::Answer, 0, 2}, bad(3, "empty")};
  if (sf) noKey.push_back(bad(4, "token")), noKey.push_back(bad(5, "unterminated"));
  struct Spec {
    const char* id;
    const char* label;
    const char* description;
    std::vector<std::vector<ClientOp>> variants; ///< one schedule per variant and run
  };
  const std::vector<Spec> specs{
      {"http:retry", "retry after the answer", "send 1, send 1", {{send(1), send(1)}}},
      {"http:timeout-inflight", "retry while in flight",
       "send 1 (timeout: held at its COMMIT), send 1 while the first is in flight", {{send(1, 0, W::Timeout), send(1)}}},
      {"http:timeout-after", "retry after a timeout",
       "send 1 (timeout), send 2, then send 1 once the first completed", {{send(1, 0, W::Timeout), send(2), send(1)}}},
      {"http:burst", "burst of 8", "8 copies of one request written at once; their COMMITs held until all wait there",
       {{burst(1, 8)}}},
      {"http:mismatch", "key reused, other payload", "send 1, then key 1 with payload 2", {{send(1), send(1, 2)}}},
      {"http:mismatch-inflight", "mismatch while in flight", "send 1 (timeout), key 1 with payload 2 while in flight",
       {{send(1, 0, W::Timeout), send(1, 2), send(1)}}},
      {"http:mismatch-race", "mismatch in a race", "a burst of 4 with key 1 whose last copy carries payload 2",
       {{burst(1, 4, 2)}}},
      {"http:missing-key", "missing or malformed key",
       sf ? "no key; an empty, an unquoted and an unterminated sf-string" : "no key; an empty one", {noKey}},
      {"http:cut", "connection cut, then retry", "send 1 cut after the request / after the headers / mid-body, then send 1",
       {{send(1, 0, W::CutRequest), send(1)}, {send(1, 0, W::CutHeaders), send(1)}, {send(1, 0, W::CutBody), send(1)}}},
  };
  std::vector<Spec> all = specs;
  if (sc.http && sc.http->policy.retentionMs <= 2000) { // short enough to wait out
    ClientOp late = send(1);
    late.afterRetention = true;
    all.push_back({"http:after-retention", "key used after its retention",
                   "send 1, then send 1 once the declared retention passed: a replay or a fresh execution", {{send(1), late}}});
  }
  std::vector<Generated> out;
  for (const auto& sp : all) {
    Generated g;
    g.cls = {sp.id, "http", sp.label, sp.description};
    for (int i = 0; i < runs; ++i)
      for (const auto& v : sp.variants) {
        int events = 0;
        for (const auto& c : v) events = std::max({events, c.key, c.body, c.other});
        Schedule s = generatedSchedule(sc, events, seed + static_cast<uint64_t>(i));
        s.stream.clear();
        s.values.clear();
        s.client = v;
        g.schedules.push_back(std::move(s));
      }
    out.push_back(std::move(g));
  }
  return out;
}

namespace {

/// c1's points for a race class: before each step of its work on the first entry it acknowledged (its
/// delivering read left out: the work starts after it), at most `n` from the middle.
std::vector<Fault> raceHoldPoints(const std::vector<Op>& history, int n) {
  auto work = entryWork(history, "c1");
  if (work.empty()) return {};
  // A first acknowledgement of several entries (a batch's offset commit) closes the work of several
  // events: a step of it with k > 1 may be the second event's, which the races' one-event schedules never
  // reach. Then only the first occurrence of each verb, which the first event's work has.
  const bool batch = work.front().steps.back().step->acked.size() > 1;
  // A driver's connection set-up before the first statement on the data is no place for a race: held there,
  // c1 has not looked at the event yet. SQLAlchemy connects at its first use, after the delivery, and sends
  // BEGIN, a pg_type lookup, version(), current_schema(), SHOW … and ROLLBACK before the consumer's own
  // first statement. So PostgreSQL steps before the first one naming a table of the user's (not a pg_ catalog)
  // are left out; other servers' steps (a Valkey mark) stay. With no such statement, every step stays.
  const auto& steps = work.front().steps;
  const auto data = std::find_if(steps.begin(), steps.end(), onUserData); // steps.end(): every step stays
  std::vector<ClassedPoint> points, firsts;
  for (auto it = steps.begin(); it != steps.end(); ++it) {
    const auto& p = *it;
    if (!p.step->delivered.empty()) continue;
    if (data != steps.end() && it < data && p.step->server == "pg") continue;
    points.push_back({.fault = p.fault("hold", When::Before), .server = p.step->server, .detail = p.step->detail});
    if (p.k == 1) firsts.push_back(points.back());
  }
  if (batch && !firsts.empty()) points = std::move(firsts);
  std::vector<Fault> out;
  for (const auto& p : sampleCentered(points, n)) out.push_back(p.fault);
  return out;
}

/// Two events of one record with different versions, older first (none when the scenario is not versioned).
std::optional<std::pair<Event, Event>> twoVersions(const Scenario& sc, const Schedule& base) {
  std::string by = versionKeyField(sc);
  if (by.empty()) return std::nullopt;
  std::string versionField;
  for (const auto& f : sc.fields)
    if (f.gen == "version") versionField = f.name;
  for (size_t i = 0; i < base.events.size(); ++i)
    for (size_t j = 0; j < base.events.size(); ++j) {
      const auto &a = base.events[i], &b = base.events[j];
      if (!a.fields.count(by) || !b.fields.count(by) || a.fields.at(by) != b.fields.at(by)) continue;
      if (!a.fields.count(versionField) || !b.fields.count(versionField)) continue;
      try {
        if (std::stoll(a.fields.at(versionField)) < std::stoll(b.fields.at(versionField))) return std::make_pair(a, b);
      } catch (const std::exception&) {
      }
    }
  return std::nullopt;
}

} // namespace

std::vector<RaceSchedule> raceSchedules(const Scenario& sc, const Schedule& base, const std::vector<Op>& history,
                                        int perClass) {
  std::vector<RaceSchedule> out;
  auto points = raceHoldPoints(history, perClass);
  if (points.empty()) return out;
  // c2's first acknowledgement, in its broker's verb as the baseline shows it (a step that acknowledged
  // entries): XACK on Valkey, ACK on NATS and RabbitMQ, COMMIT_OFFSET on Kafka.
  std::string ackVerb = "XACK";
  for (const auto& [op, s] : recordsOf<ops::Step>(history))
    if (!s->acked.empty()) {
      ackVerb = s->verb;
      break;
    }
  const Fault killC2 = Fault::parse("c2:before:" + ackVerb + "#1", "race class");
  const Class claim{"race:claim", "race", "claim while busy",
                    "two consumers; c1 held before a step of its first entry until c2 is idle or waits on a lock: c2 "
                    "claims c1's entries (XAUTOCLAIM on Valkey; elsewhere the broker hands them over) and works on "
                    "them first"};
  const Class dup{"race:dup", "race", "duplicate at once",
                  "two consumers; an event's retry sent in flight reaches c2 while c1, held before a step of the "
                  "first copy, waits until c2 has acknowledged its copy (or waits on a lock); no claims while it lasts (CLAIM_IDLE_MS 1 s)"};
  const Class versions{"race:versions", "race", "versions across replicas",
                       "two versions of one record, in both orders, one to each consumer, worked on at once as in "
                       "duplicate at once"};
  const Class claimKill{"race:claim+kill", "race", "claim while busy + kill",
                        "claim while busy, and c2 killed before its first acknowledgement (c2:before:XACK#1 on "
                        "Valkey, ACK#1 on NATS and RabbitMQ, COMMIT_OFFSET#1 on Kafka)"};
  const Class dupKill{"race:dup+kill", "race", "duplicate at once + kill",
                      "duplicate at once, and c2 killed before its first acknowledgement (as in claim while busy "
                      "+ kill)"};
  auto atOnce = [&](const std::vector<Event>& events, int first, int second) {
    Schedule s = base;
    s.events = events;
    s.stream = {{first, 1, false}, {second, 1, true}};
    s.consumers = 2;
    // Long enough that no claim takes c1's entry while c2 starts and works on its copy (a few hundred ms
    // even for an interpreted consumer), short enough that a killed process's entry is claimed soon after.
    s.claimIdleMs = 1000;
    return s;
  };
  for (const auto& p : points) {
    Schedule s = base;
    s.consumers = 2;
    s.faults = {p};
    out.push_back({claim, s});
    s.faults.push_back(killC2);
    out.push_back({claimKill, s});
  }
  Event one = base.events.front();
  one.n = 1;
  for (const auto& p : points) {
    Fault hold = p;
    hold.args = {"c2", "after", ackVerb + "#1"};
    Schedule s = atOnce({one}, 1, 1);
    s.faults = {hold};
    out.push_back({dup, s});
    s.faults.push_back(killC2);
    out.push_back({dupKill, s});
  }
  if (auto two = twoVersions(sc, base)) {
    auto [older, newer] = *two;
    older.n = 1;
    newer.n = 2;
    for (const auto& p : points) {
      Fault hold = p;
      hold.args = {"c2", "after", ackVerb + "#1"};
      for (auto [first, second] : {std::pair{1, 2}, std::pair{2, 1}}) {
        Schedule s = atOnce({older, newer}, first, second);
        s.faults = {hold};
        out.push_back({versions, s});
      }
    }
  }
  return out;
}

bool raced(const std::string& cls, const Schedule& s, const std::vector<Op>& history) {
  if (s.faults.empty() || s.faults.front().kind != "hold") return false;
  const std::string holder = s.faults.front().process.empty() ? "c1" : s.faults.front().process;
  // The holder's first hold, from its firing to its release (checkers/holds.h: one reading of the two).
  const auto spans = holdsOf(history);
  const auto hold = std::find_if(spans.begin(), spans.end(), [&](const HoldSpan& h) {
    return h.process == holder && !h.pause;
  });
  if (hold == spans.end()) return false; // it never fired
  const int64_t end = hold->released < 0 ? std::numeric_limits<int64_t>::max() : hold->released;
  std::map<std::string, int> eventOf; // entry -> event
  for (const auto& [op, send] : recordsOf<ops::Send>(history)) eventOf[send->entry] = send->n;
  std::set<int> holderEvents;
  for (const auto& op : history) {
    const auto* st = op.as<ops::Step>();
    if (!st || op.index >= end) continue;
    if (op.index < hold->fired) {
      if (op.process == holder)
        for (const auto& d : st->delivered)
          if (auto e = eventOf.find(d.entry); e != eventOf.end()) holderEvents.insert(e->second);
      continue;
    }
    if (op.process == holder || op.process == "harness") continue;
    for (const auto& d : st->delivered) {
      if (cls == "race:versions") return true;
      if (auto e = eventOf.find(d.entry); e != eventOf.end() && holderEvents.count(e->second)) return true;
    }
  }
  return false;
}

void mergeClassOrder(std::vector<Class>& order, const std::vector<Class>& mine) {
  auto pos = [&](const std::string& id) {
    return std::find_if(order.begin(), order.end(), [&](const Class& c) { return c.id == id; });
  };
  std::string previous;
  for (const auto& c : mine) {
    if (pos(c.id) == order.end()) {
      auto at = previous.empty() ? order.begin() : pos(previous);
      order.insert(previous.empty() ? order.begin() : at == order.end() ? order.end() : at + 1, c);
    }
    previous = c.id;
  }
}

} // namespace idem::compare
