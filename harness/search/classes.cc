#include "search/classes.h"

#include <fmt/format.h>
#include <rapidcheck.h>

#include <algorithm>
#include <cstdlib>

namespace idem {

namespace {

/// The draws that give back the default schedule's event `e`: a key's index, an int's value, a pick's index
/// (0 where the value is none of them).
Shape::Event drawsOf(const Scenario& sc, const Event& e, int order) {
  Shape::Event out;
  out.order = order;
  for (const auto& f : sc.fields) {
    if (f.gen != "key" && f.gen != "int" && f.gen != "pick") continue;
    auto it = e.fields.find(f.name);
    int64_t d = 0;
    if (it != e.fields.end()) {
      const auto& v = it->second;
      if (f.gen == "key") d = std::find(sc.keys.begin(), sc.keys.end(), v) - sc.keys.begin();
      else if (f.gen == "pick") d = std::find(f.values.begin(), f.values.end(), v) - f.values.begin();
      else d = std::clamp<int64_t>(std::strtoll(v.c_str(), nullptr, 10), f.min, f.max);
      if (f.gen == "key" && d >= static_cast<int64_t>(sc.keys.size())) d = 0;
      if (f.gen == "pick" && d >= static_cast<int64_t>(f.values.size())) d = 0;
    } else if (f.gen == "int") {
      d = f.min;
    }
    out.draws.push_back(d);
  }
  return out;
}

/// The default schedule's events, each sent once, with one consumer and no fault (no event when it has none).
Shape defaultEvents(const Scenario& sc) {
  Shape base;
  const auto& events = sc.default_schedule.events;
  for (size_t i = 0; i < events.size(); ++i) base.events.push_back(drawsOf(sc, events[i], static_cast<int>(i)));
  base.keys = std::max<int>(1, sc.keys.size());
  return base;
}

} // namespace

/// HTTP: one request its client gives up on, and a delay past the declared lease before the first step of
/// each verb: whether a lock's lease that runs out under its holder lets the client's retries execute again.
std::vector<Shape> pastLeaseShapes(const Scenario& sc, const KillModel& km, const ModelParams& p) {
  const auto delay = std::find(p.faultKinds.begin(), p.faultKinds.end(), "delay");
  if (km.empty() || p.maxKills < 1 || p.leaseMs <= 0 || delay == p.faultKinds.end()) return {};
  Shape base;
  const auto& events = sc.default_schedule.events;
  base.events.push_back(events.empty() ? drawsOf(sc, Event{}, 0) : drawsOf(sc, events.front(), 0));
  base.keys = std::max<int>(1, sc.keys.size());
  Shape::Request r;
  r.wait = 1; // timeout
  base.requests = {r};
  std::vector<Shape> out;
  for (size_t v = 0; v < km.verbs().size(); ++v) {
    if (km.bound(km.verbs()[v], 1) < 1) continue;
    Shape s = base;
    Shape::Kill k;
    k.verb = static_cast<int>(v);
    k.before = true;
    k.kind = static_cast<int>(delay - p.faultKinds.begin());
    k.pastLease = true;
    s.kills = {k};
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<Shape> classShapes(const Scenario& sc, const KillModel& km, const ModelParams& p) {
  if (sc.http) return pastLeaseShapes(sc, km, p);
  if (km.empty() || p.maxKills < 1) return {};
  Shape base;
  const auto& events = sc.default_schedule.events;
  const int maxEvents = std::max(1, p.maxEvents), minEvents = std::clamp(p.minEvents, 1, maxEvents);
  for (size_t i = 0; i < events.size() && static_cast<int>(i) < maxEvents; ++i)
    base.events.push_back(drawsOf(sc, events[i], static_cast<int>(i)));
  while (static_cast<int>(base.events.size()) < minEvents) {
    Shape::Event e = base.events.empty() ? drawsOf(sc, Event{}, 0) : base.events.back();
    e.order = static_cast<int>(base.events.size());
    base.events.push_back(std::move(e));
  }
  base.keys = std::max<int>(1, sc.keys.size());
  base.consumers = std::clamp(p.minConsumers, 1, kMaxConsumers);
  const int n = static_cast<int>(base.events.size());
  std::vector<int> work, rest; // verb indices
  for (size_t v = 0; v < km.verbs().size(); ++v) {
    const auto& verb = km.verbs()[v];
    if (km.bound(verb, 1) < 1 && km.bound(verb, n) < 1) continue;
    (km.perEvent(verb) >= 0.5 ? work : rest).push_back(static_cast<int>(v));
  }
  std::reverse(work.begin(), work.end());
  std::vector<Shape> out;
  auto each = [&](const std::vector<int>& verbs, int process) {
    for (bool before : {true, false})
      for (int v : verbs) {
        Shape s = base;
        Shape::Kill k;
        k.verb = v;
        k.before = before;
        k.process = process;
        s.kills = {k};
        out.push_back(std::move(s));
      }
  };
  each(work, 0);
  // An outbox relay's own points (r1: process draw `consumers`, materialize), after the consumers' work:
  // a relay that marks its row sent before its call fails only there.
  if (const KillModel* relay = km.relay(); relay && !relay->empty()) {
    std::vector<int> verbs;
    for (size_t v = 0; v < relay->verbs().size(); ++v)
      if (relay->bound(relay->verbs()[v], n) >= 1) verbs.push_back(static_cast<int>(v));
    each(verbs, base.consumers);
  }
  each(rest, 0);
  for (auto& s : slowWorkShapes(sc, km, p)) out.push_back(std::move(s));
  for (auto& s : lateAnswerShapes(sc, km, p)) out.push_back(std::move(s));
  return out;
}

std::vector<Shape> lateAnswerShapes(const Scenario& sc, const KillModel& km, const ModelParams& p) {
  const auto delay = std::find(p.faultKinds.begin(), p.faultKinds.end(), "delay");
  if (!sc.sink || p.callTimeoutMs <= 0 || delay == p.faultKinds.end() || p.maxKills < 1 || p.minConsumers > 1) return {};
  const Shape base = defaultEvents(sc);
  const int n = static_cast<int>(base.events.size());
  // The consumer's calls, else its outbox relay's (r1: process draw 1 with one consumer, materialize).
  auto calls = [&](const KillModel& m) {
    const auto it = std::find(m.verbs().begin(), m.verbs().end(), "CALL");
    return it != m.verbs().end() && m.server("CALL") == "sink" && m.bound("CALL", n) >= 1
               ? static_cast<int>(it - m.verbs().begin())
               : -1;
  };
  const KillModel* relay = km.relay() && !km.relay()->empty() ? km.relay() : nullptr;
  int call = calls(km), process = 0;
  if (call < 0 && relay && (call = calls(*relay)) >= 0) process = 1;
  if (n == 0 || call < 0) return {};
  std::vector<Shape> out;
  for (bool before : {false, true}) {
    Shape s = base;
    Shape::Kill k;
    k.verb = call;
    k.before = before;
    k.process = process;
    k.kind = static_cast<int>(delay - p.faultKinds.begin());
    k.pastLease = true;
    s.kills = {k};
    out.push_back(std::move(s));
  }
  return out;
}

std::string classSweepLine(const std::vector<Shape>& classes, size_t runs, bool http) {
  const size_t shown = std::min(classes.size(), runs);
  if (http)
    return fmt::format("runs 1..{} time out one request and delay it past the lease once before each verb; random "
                       "schedules after them", shown);
  auto count = [&](auto pred) {
    return std::count_if(classes.begin(), classes.end(), [&](const Shape& s) {
      return std::any_of(s.kills.begin(), s.kills.end(), pred);
    });
  };
  const auto slow = count([](const Shape::Kill& k) { return k.slowWork; });
  const auto late = count([](const Shape::Kill& k) { return k.pastLease; });
  const auto relay = count([](const Shape::Kill& k) { return k.process != 0 && !k.pastLease; });
  std::string more;
  if (relay > 0) more += ", the outbox relay's (r1) too";
  if (slow > 0)
    more += fmt::format(", then slow c1's work past its next acknowledgement of several entries at {} point{}", slow,
                        slow == 1 ? "" : "s");
  if (late > 0) more += ", then answer c1's first call (or r1's) later than its declared timeout, after and before the sink";
  return fmt::format("runs 1..{} kill once at each class of kill point of the trace (when, verb){}; random schedules "
                     "after them", shown, more);
}

std::vector<Shape> slowWorkShapes(const Scenario& sc, const KillModel& km, const ModelParams& p) {
  auto kindOf = [&](const std::string& kind) {
    auto it = std::find(p.faultKinds.begin(), p.faultKinds.end(), kind);
    return it == p.faultKinds.end() ? -1 : static_cast<int>(it - p.faultKinds.begin());
  };
  auto verbOf = [&](const std::string& verb) {
    auto it = std::find(km.verbs().begin(), km.verbs().end(), verb);
    return it == km.verbs().end() ? -1 : static_cast<int>(it - km.verbs().begin());
  };
  const int delay = kindOf("delay"), kill = kindOf("kill");
  // One consumer, the trace's own events: the points are those of c1's trace. Its first point and its last.
  if (sc.http || p.slowWork.empty() || delay < 0 || kill < 0 || p.maxKills < 2 || p.minConsumers > 1) return {};
  std::vector<ModelParams::SlowWork> points{p.slowWork.front()};
  if (p.slowWork.size() > 1) points.push_back(p.slowWork.back());
  const Shape base = defaultEvents(sc);
  if (base.events.empty()) return {};
  std::vector<Shape> out;
  for (const auto& w : points) {
    const int work = verbOf(w.work), ack = verbOf(w.ack);
    if (work < 0 || ack < 0 || km.bound(w.work, static_cast<int>(base.events.size())) < w.k ||
        km.bound(w.ack, static_cast<int>(base.events.size())) < w.ackK)
      continue; // a point past what every run reaches: it would land elsewhere
    Shape s = base;
    Shape::Kill slow;
    slow.verb = work;
    slow.before = true;
    slow.k = w.k;
    slow.kind = delay;
    slow.slowWork = true;
    Shape::Kill after;
    after.verb = ack;
    after.before = false;
    after.k = w.ackK;
    after.kind = kill;
    s.kills = {slow, after};
    out.push_back(std::move(s));
  }
  return out;
}

rc::Shrinkable<Shape> fixedCase(const Shape& start, const ModelParams& p) {
  const size_t minEvents = static_cast<size_t>(std::max(1, p.minEvents));
  const size_t minKills = static_cast<size_t>(std::max(0, p.minKills));
  return rc::shrinkable::shrinkRecur(start, [minEvents, minKills](const Shape& s) {
    std::vector<Shape> shrinks;
    if (!s.kills.empty() && s.kills.size() > minKills) {
      Shape t = s;
      t.kills.clear();
      shrinks.push_back(std::move(t));
    }
    for (size_t i = 0; s.events.size() > minEvents && i < s.events.size(); ++i) {
      Shape t = s;
      t.events.erase(t.events.begin() + static_cast<long>(i));
      shrinks.push_back(std::move(t));
    }
    return rc::seq::fromContainer(std::move(shrinks));
  });
}

} // namespace idem
