// The class sweep of check (search/classes.h): one schedule per (when, verb) of the kill model, on the
// default events each sent once, in a fixed order; cases after it are the seed's random schedules; a
// class case shrinks toward fewer events and no fault.
#include "model_util.h"

#include "search/classes.h"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <set>

using namespace idem;
using namespace idem::testing;

TEST_CASE("the class sweep kills once at each class: before the entry work from its last verb back, after, then the rest") {
  auto sc = builtin("wallet");
  auto km = dedupTableModel();
  ModelParams p;
  auto shapes = classShapes(sc, km, p);
  REQUIRE(shapes.size() == 2 * km.verbs().size());
  std::vector<std::string> points;
  for (const auto& s : shapes) {
    Schedule x = materialize(s, sc, km, 1, p);
    REQUIRE(x.faults.size() == 1);
    CHECK(x.faults[0].k == 1);
    CHECK(x.faults[0].isKill());
    CHECK(x.events.size() == sc.default_schedule.events.size());
    CHECK(x.stream.size() == x.events.size()); // each event once, no retry
    CHECK(x.consumers == 1);
    for (const auto& e : x.events) CHECK(e.fields.at("wallet") == "w1"); // the default events' draws
    points.push_back(x.faults[0].point());
  }
  CHECK(points == std::vector<std::string>{"before:XACK#1", "before:COMMIT#1", "before:UPDATE#1", "before:INSERT#1",
                                           "before:BEGIN#1", "after:XACK#1", "after:COMMIT#1", "after:UPDATE#1",
                                           "after:INSERT#1", "after:BEGIN#1", "before:PARSE#1", "before:XREADGROUP#1",
                                           "before:XAUTOCLAIM#1", "after:PARSE#1", "after:XREADGROUP#1",
                                           "after:XAUTOCLAIM#1"});
  p.maxKills = 0;
  CHECK(classShapes(sc, km, p).empty());
}

TEST_CASE("slow work: a delay past the next acknowledgement and a kill after it, at the trace's first and last point") {
  auto sc = builtin("wallet");
  auto km = dedupTableModel();
  ModelParams p;
  p.faultKinds = {"kill", "drop", "delay"};
  p.slowWorkMs = 6000;
  p.slowWork = {{"INSERT", 1, "XACK", 1}, {"UPDATE", 1, "XACK", 1}, {"UPDATE", 2, "XACK", 1}};
  auto slow = slowWorkShapes(sc, km, p);
  REQUIRE(slow.size() == 2); // the first point and the last
  std::vector<std::string> faults;
  for (const auto& s : slow) {
    Schedule x = materialize(s, sc, km, 1, p);
    CHECK(x.consumers == 1);
    CHECK(x.events.size() == sc.default_schedule.events.size());
    std::string text;
    for (const auto& f : x.faults) text += (text.empty() ? "" : " ") + f.str();
    faults.push_back(text);
  }
  CHECK(faults == std::vector<std::string>{"delay:before:INSERT#1:6000 after:XACK#1", "delay:before:UPDATE#2:6000 after:XACK#1"});
  // Last among the class shapes.
  auto all = classShapes(sc, km, p);
  REQUIRE(all.size() == 2 * km.verbs().size() + 2);
  CHECK(nlohmann::json(materialize(all.back(), sc, km, 1, p)).dump() == nlohmann::json(materialize(slow.back(), sc, km, 1, p)).dump());
  // Not without a delay or a kill to draw, nor with two consumers at least.
  ModelParams noDelay = p;
  noDelay.faultKinds = {"kill", "drop"};
  CHECK(slowWorkShapes(sc, km, noDelay).empty());
  ModelParams two = p;
  two.minConsumers = 2;
  CHECK(slowWorkShapes(sc, km, two).empty());
  // A point past what every run of the default events reaches is left out.
  ModelParams far = p;
  far.slowWork = {{"INSERT", 99, "XACK", 1}};
  CHECK(slowWorkShapes(sc, km, far).empty());
}

TEST_CASE("cases: the classes first, then the seed's random schedules as before, whatever the shard") {
  auto sc = builtin("wallet");
  auto km = dedupTableModel();
  ModelParams p;
  auto gen = shapeGen(sc, km, p);
  Cases cases(gen, classShapes(sc, km, p), p, 9);
  auto text = [&](const rc::Shrinkable<Shape>& s) { return nlohmann::json(materialize(s.value(), sc, km, 9, p)).dump(); };
  REQUIRE(cases.classes() == 16);
  for (uint64_t i = 0; i < 10; ++i) CHECK(text(cases.at(16 + i)) == text(generateCase(gen, 9, i)));
  CHECK(text(cases.at(3)) == text(Cases(gen, classShapes(sc, km, p), p, 123).at(3)));
}

TEST_CASE("a class case shrinks to no fault and to fewer events, never below one") {
  auto sc = builtin("wallet");
  auto km = dedupTableModel();
  ModelParams p;
  auto c = fixedCase(classShapes(sc, km, p).at(2), p);
  auto first = c.shrinks().next();
  REQUIRE(first);
  CHECK(first->value().kills.empty());
  // Always the last shrink: one event less each time, then (at one event) no fault.
  auto cur = c;
  int steps = 0;
  for (;;) {
    rc::Maybe<rc::Shrinkable<Shape>> last;
    auto seq = cur.shrinks();
    while (auto n = seq.next()) last = n;
    if (!last) break;
    cur = *last;
    ++steps;
  }
  CHECK(steps == 5);
  CHECK(cur.value().events.size() == 1);
  CHECK(cur.value().kills.empty());
}

namespace {

/// A payments consumer's trace of `events` entries: per entry the sink's CALL, then BEGIN, INSERT, COMMIT
/// and XACK (acknowledging it).
std::vector<Op> callTrace(int events) {
  History h;
  h.append("harness", ops::Plan{});
  for (int i = 1; i <= events; ++i) {
    for (const char* verb : {"CALL", "BEGIN", "INSERT", "COMMIT", "XACK"}) {
      ops::Step s;
      s.verb = verb;
      s.server = std::string(verb) == "CALL" ? "sink" : std::string(verb) == "XACK" ? "valkey" : "pg";
      s.k = i;
      if (std::string(verb) == "XACK") s.acked = {fmt::format("1-{}", i)};
      h.append("c1", s);
    }
  }
  return h.ops();
}

} // namespace

TEST_CASE("late answers: with a sink's call timeout, a delay past it after and before c1's first CALL") {
  auto sc = builtin("payments");
  REQUIRE(sc.sink->timeoutMs == 2000);
  auto km = KillModel::learn(callTrace(1), 1, callTrace(2), 2);
  REQUIRE(km.server("CALL") == "sink");
  ModelParams p;
  p.faultKinds = {"kill", "delay"};
  p.callTimeoutMs = sc.sink->timeoutMs;
  auto late = lateAnswerShapes(sc, km, p);
  REQUIRE(late.size() == 2);
  std::vector<std::string> faults;
  for (const auto& s : late) {
    Schedule x = materialize(s, sc, km, 1, p);
    REQUIRE(x.faults.size() == 1);
    CHECK(x.consumers == 1);
    faults.push_back(x.faults[0].str());
  }
  CHECK(faults == std::vector<std::string>{"delay:after:CALL#1:2500", "delay:before:CALL#1:2500"});
  // Last among the class shapes; none without a declared timeout or without delays to draw.
  auto all = classShapes(sc, km, p);
  CHECK(nlohmann::json(materialize(all.back(), sc, km, 1, p)).dump() == nlohmann::json(materialize(late.back(), sc, km, 1, p)).dump());
  ModelParams noTimeout = p;
  noTimeout.callTimeoutMs = 0;
  CHECK(lateAnswerShapes(sc, km, noTimeout).empty());
  ModelParams noDelay = p;
  noDelay.faultKinds = {"kill"};
  CHECK(lateAnswerShapes(sc, km, noDelay).empty());
  // A delay drawn past the timeout lasts it only at a CALL: elsewhere it is the short one.
  Shape s = late.front();
  s.kills.front().verb = static_cast<int>(std::find(km.verbs().begin(), km.verbs().end(), "COMMIT") - km.verbs().begin());
  CHECK(materialize(s, sc, km, 1, p).faults[0].str() == fmt::format("delay:after:COMMIT#1:{}", p.delayMs));
}

TEST_CASE("an outbox relay's points are classes too: r1 killed once at each of its verbs, after the consumers' work") {
  auto sc = builtin("wallet");
  auto km = dedupTableModel();
  km.setRelay(KillModel::fromLines({{"SELECT", {0, 1}}, {"CALL", {0, 1}}, {"UPDATE", {0, 1}}, {"COMMIT", {0, 1}}}));
  ModelParams p;
  auto shapes = classShapes(sc, km, p);
  REQUIRE(shapes.size() == 2 * km.verbs().size() + 2 * 4);
  std::vector<std::string> points;
  for (const auto& s : shapes) {
    Schedule x = materialize(s, sc, km, 1, p);
    REQUIRE(x.faults.size() == 1);
    points.push_back(x.faults[0].str());
  }
  // The consumer's work verbs (before, after), then r1's, then the rest.
  const std::vector<std::string> relay{"r1:before:SELECT#1", "r1:before:CALL#1", "r1:before:UPDATE#1",
                                       "r1:before:COMMIT#1", "r1:after:SELECT#1", "r1:after:CALL#1",
                                       "r1:after:UPDATE#1", "r1:after:COMMIT#1"};
  CHECK(std::vector<std::string>(points.begin() + 10, points.begin() + 18) == relay);
  CHECK(points[9] == "after:BEGIN#1");
  CHECK(points[18] == "before:PARSE#1");
  CHECK_THAT(classSweepLine(shapes, 20, false), Catch::Matchers::Contains("the outbox relay's (r1) too"));
}
