// The pure model of `check`: generation is deterministic per seed, respects its bounds, produces valid
// schedules (they survive a round trip through the schedule file format), and every shrink candidate is
// no bigger than what it shrinks.
#include "model_util.h"

#include "history/trace.h"
#include "search/model.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

using namespace idem;
using namespace idem::testing;

namespace {

Schedule caseOf(const rc::Gen<Shape>& gen, const Scenario& sc, const KillModel& km, uint64_t seed, uint64_t i) {
  return materialize(generateCase(gen, seed, i).value(), sc, km, seed);
}

std::string text(const Schedule& s) { return nlohmann::json(s).dump(); }

/// Every event is sent at least once, phases never decrease, versions are per key 1..m.
void requireValid(const Schedule& s, const Scenario& sc) {
  REQUIRE(!s.events.empty());
  std::set<int> sent;
  int phase = 1;
  for (const auto& e : s.stream) {
    REQUIRE(e.phase >= phase);
    phase = e.phase;
    sent.insert(e.event);
  }
  REQUIRE(sent.size() == s.events.size());
  for (const auto& e : s.events)
    for (const auto& f : sc.fields)
      if (f.gen != "uuid") REQUIRE(e.fields.count(f.name) == 1);
  Schedule back = scheduleFromJson(nlohmann::json(s), "round trip");
  REQUIRE(text(back) == text(s));
}

} // namespace

TEST_CASE("the same seed and index give the same schedule, other seeds give others") {
  auto sc = builtin("wallet");
  auto km = dedupTableModel();
  auto gen = shapeGen(sc, km, {});
  std::set<std::string> distinct;
  for (uint64_t i = 0; i < 50; ++i) {
    auto a = caseOf(gen, sc, km, 42, i), b = caseOf(shapeGen(sc, km, {}), sc, km, 42, i);
    REQUIRE(text(a) == text(b));
    distinct.insert(text(a));
  }
  CHECK(distinct.size() >= 45);
  int same = 0;
  for (uint64_t i = 0; i < 20; ++i) same += text(caseOf(gen, sc, km, 1, i)) == text(caseOf(gen, sc, km, 2, i));
  CHECK(same <= 2);
}

TEST_CASE("generated schedules respect max-events and the kill model, and are valid") {
  for (const char* name : {"wallet", "customer-city", "order-shipping"}) {
    auto sc = builtin(name);
    auto km = dedupTableModel();
    for (int maxEvents : {1, 3, 6}) {
      ModelParams p;
      p.maxEvents = maxEvents;
      auto gen = shapeGen(sc, km, p);
      std::set<size_t> sizes;
      int withKills = 0, withRetries = 0, laterPhases = 0;
      for (uint64_t i = 0; i < 200; ++i) {
        INFO(name << " max " << maxEvents << " case " << i);
        auto s = caseOf(gen, sc, km, 7, i);
        requireValid(s, sc);
        REQUIRE(s.events.size() >= 1);
        REQUIRE(static_cast<int>(s.events.size()) <= maxEvents);
        sizes.insert(s.events.size());
        REQUIRE(s.faults.size() <= 2);
        for (const auto& k : s.faults) {
          REQUIRE(k.k >= 1);
          REQUIRE(k.k <= km.bound(k.verb, static_cast<int>(s.events.size())));
        }
        withKills += !s.faults.empty();
        withRetries += s.retries() > 0;
        laterPhases += s.phases() > 1;
      }
      CHECK(static_cast<int>(sizes.size()) == maxEvents); // every count from 1 to max occurs
      CHECK(withKills > 100);
      CHECK(withRetries > 50);
      CHECK(laterPhases > 20);
    }
  }
}

TEST_CASE("a versioned scenario gets out-of-order versions of each key, and in-order ones too") {
  auto sc = builtin("customer-city");
  auto km = dedupTableModel();
  auto gen = shapeGen(sc, km, {});
  int outOfOrder = 0;
  for (uint64_t i = 0; i < 200; ++i) {
    auto s = caseOf(gen, sc, km, 3, i);
    std::map<std::string, int> last; // customer -> last version seen in phase 1 originals
    std::set<int> seen;
    bool disordered = false;
    for (const auto& e : s.stream) {
      if (!seen.insert(e.event).second) continue;
      const auto& f = s.events[e.event - 1].fields;
      int v = std::stoi(f.at("version"));
      if (v < last[f.at("customer")]) disordered = true;
      last[f.at("customer")] = std::max(last[f.at("customer")], v);
    }
    outOfOrder += disordered;
  }
  CHECK(outOfOrder > 20);
  CHECK(outOfOrder < 180);
  // A shape whose sort keys are all equal delivers every key's versions in order.
  Shape shape;
  shape.keys = 1;
  for (int i = 0; i < 3; ++i) shape.events.push_back({{0, 0}, 0, {}});
  auto s = materialize(shape, sc, km, 0);
  REQUIRE(s.stream.size() == 3);
  CHECK(s.stream[0].event == 1);
  CHECK(s.stream[2].event == 3);
  shape.events[0].order = 2;
  s = materialize(shape, sc, km, 0);
  CHECK(s.stream[2].event == 1); // version 1 now comes last
}

TEST_CASE("materialize: retries after their original, later phases renumbered, one kill per step") {
  auto sc = builtin("wallet");
  auto km = dedupTableModel();
  Shape shape;
  shape.keys = 3;
  shape.events = {{{2, 500}, 0, {{1, 0}, {3, 1}}}, {{1, 100}, 0, {}}};
  shape.kills = {{6, false, 9}, {6, true, 9}, {0, true, 3}};
  shape.sameName = true;
  auto s = materialize(shape, sc, km, 9);
  CHECK(s.events[0].fields.at("wallet") == "w3");
  // Summed amounts are chosen to decode (scenario/decodable.h), whatever was drawn: the first on each wallet.
  CHECK(s.events[0].fields.at("amount") == "100");
  CHECK(s.events[1].fields.at("amount") == "100");
  CHECK_FALSE(s.values.empty());
  REQUIRE(s.stream.size() == 4);
  CHECK(s.stream[0].event == 1);
  CHECK(s.stream[1].event == 1); // offset 0: right after the original
  CHECK(s.stream[2].event == 2);
  CHECK(s.stream[3].event == 1);
  CHECK(s.stream[3].phase == 2); // drawn phase 3, renumbered
  // COMMIT bound for 2 events is 2: k 9 -> 1 + 8 % 2 = 1; the "before" point on the same step is dropped.
  REQUIRE(s.faults.size() == 2);
  CHECK(s.faults[0].str() == "after:COMMIT#1");
  CHECK(s.faults[1].str() == "before:PARSE#1");
  CHECK(s.restart == RestartStyle::SameName);
  CHECK(s.seed == 9);
}

TEST_CASE("every shrink candidate is no bigger, and shrinking reaches the simplest schedule") {
  auto sc = builtin("wallet");
  auto km = dedupTableModel();
  auto gen = shapeGen(sc, km, {});
  for (uint64_t i = 0; i < 20; ++i) {
    auto shrinkable = generateCase(gen, 11, i);
    auto s = materialize(shrinkable.value(), sc, km, 11);
    auto seq = shrinkable.shrinks();
    int n = 0;
    while (auto c = seq.next()) {
      auto t = materialize(c->value(), sc, km, 11);
      INFO("case " << i << ": " << s.summary() << " -> " << t.summary());
      requireValid(t, sc);
      CHECK(t.events.size() <= s.events.size());
      CHECK(t.stream.size() <= s.stream.size());
      CHECK(t.faults.size() <= s.faults.size());
      CHECK(t.retries() <= s.retries());
      CHECK(t.phases() <= s.phases());
      ++n;
    }
    if (s.events.size() > 1 || !s.faults.empty() || s.retries() > 0) CHECK(n > 0);
    // Always taking the first candidate walks down to one event, no retry, no kill.
    auto cur = shrinkable;
    for (int steps = 0; steps < 10000; ++steps) {
      auto first = cur.shrinks().next();
      if (!first) break;
      cur = *first;
    }
    auto least = materialize(cur.value(), sc, km, 11);
    CHECK(least.events.size() == 1);
    CHECK(least.stream.size() == 1);
    CHECK(least.faults.empty());
    CHECK(least.events[0].fields.at("amount") == "100");
    CHECK(least.events[0].fields.at("wallet") == "w1");
  }
}

TEST_CASE("HTTP: --faults kinds are drawn at the server's steps, each shaped as its kind, kills alone by default") {
  auto sc = builtin("orders");
  // An HTTP server's steps: BEGIN INSERT UPDATE COMMIT per executed request, on PostgreSQL.
  KillModel km = KillModel::fromLines({{"BEGIN", {0, 1}}, {"INSERT", {0, 2}}, {"UPDATE", {0, 1}}, {"COMMIT", {0, 1}}});
  ModelParams all;
  all.faultKinds = {"kill", "drop", "delay", "error", "restart", "pause"};
  all.delayMs = 60;
  const ModelParams kills; // check without --faults on an HTTP scenario
  auto genAll = shapeGen(sc, km, all), genKills = shapeGen(sc, km, kills);
  std::map<std::string, int> drawn;
  for (uint64_t i = 0; i < 300; ++i) {
    INFO("case " << i);
    Schedule s = materialize(generateCase(genAll, 11, i).value(), sc, km, 11, all);
    REQUIRE(!s.client.empty());
    for (const auto& f : s.faults) {
      ++drawn[f.kind];
      REQUIRE(f.process.empty()); // one server process at a time: points count over the run
      if (f.kind == "error") REQUIRE(f.when == When::Before);
      if (f.kind == "delay") REQUIRE(f.args == std::vector<std::string>{"60"});
      if (f.kind == "restart") REQUIRE(f.args == std::vector<std::string>{"pg"}); // the step's server
      if (f.kind == "pause") REQUIRE(f.args.empty());                          // kHttpPauseMs
      if (f.kind == "kill" || f.kind == "drop") REQUIRE(f.args.empty());
    }
    // The schedule file holds them as written.
    REQUIRE(text(scheduleFromJson(nlohmann::json(s), "round trip")) == text(s));
    Schedule k = materialize(generateCase(genKills, 11, i).value(), sc, km, 11, kills);
    for (const auto& f : k.faults) REQUIRE(f.isKill());
  }
  for (const char* kind : {"kill", "drop", "delay", "error", "restart", "pause"}) {
    INFO(kind);
    CHECK(drawn[kind] > 10);
  }
}

TEST_CASE("HTTP: the kind of a drawn fault shrinks toward the first of --faults, at the same point") {
  auto sc = builtin("orders");
  KillModel km = KillModel::fromLines({{"BEGIN", {0, 1}}, {"COMMIT", {0, 1}}});
  ModelParams p;
  p.faultKinds = {"kill", "drop", "error"};
  Shape s;
  s.events.resize(1);
  s.requests = {Shape::Request{}};
  Shape::Kill drop;
  drop.verb = 1; // COMMIT
  drop.kind = 1;
  s.kills = {drop};
  Schedule x = materialize(s, sc, km, 1, p);
  REQUIRE(x.faults.size() == 1);
  CHECK(x.faults[0].str() == "drop:after:COMMIT#1");
  s.kills[0].kind = 2;
  CHECK(materialize(s, sc, km, 1, p).faults[0].str() == "error:before:COMMIT#1"); // an error acts before its step
  s.kills[0].kind = 0;
  CHECK(materialize(s, sc, km, 1, p).faults[0].str() == "after:COMMIT#1");
}

TEST_CASE("HTTP replicas: routes send requests and split bursts, holds name replicas, one replica draws none") {
  auto sc = builtin("orders");
  KillModel km = KillModel::fromLines({{"SELECT", {0, 1}}, {"INSERT", {0, 1}}, {"COMMIT", {0, 1}}});
  ModelParams p;
  Shape s;
  s.events.resize(1);
  Shape::Request burst;
  burst.kind = 1;
  s.requests = {Shape::Request{}, Shape::Request{}, burst};
  s.routes = {0, 1, 3};
  Shape::Hold hold;
  hold.verb = 2; // COMMIT
  hold.release = 2;
  s.holds = {hold};
  s.replicas = 1;
  Schedule one = materialize(s, sc, km, 1, p);
  CHECK(one.replicas == 1);
  CHECK(one.faults.empty());
  for (const auto& c : one.client) CHECK((c.replica == 0 && !c.split));
  s.replicas = 2;
  Schedule two = materialize(s, sc, km, 1, p);
  CHECK(two.replicas == 2);
  CHECK(two.client[0].replica == 0);
  CHECK(two.client[1].replica == 2);
  CHECK(two.client[2].split);
  REQUIRE(two.faults.size() == 1);
  CHECK(two.faults[0].kind == "hold");
  CHECK(two.faults[0].process == "s1");
  CHECK(two.faults[0].point() == "s1:before:COMMIT#1");
  if (!two.faults[0].args.empty()) CHECK(two.faults[0].args[0] == "s2"); // released at the other replica's point
  // The schedule reads back: its holds are refused with one replica only.
  CHECK(scheduleFromJson(nlohmann::json(two), "round trip").client == two.client);

  // Drawn: every count of 1..3 with the range, none above it; with one replica the shapes stay as before.
  p.maxReplicas = 3;
  p.maxHolds = 0; // check draws holds only with --faults …,hold
  auto gen = shapeGen(sc, km, p);
  std::set<int> counts;
  for (uint64_t i = 0; i < 60; ++i) counts.insert(materialize(generateCase(gen, 7, i).value(), sc, km, 7, p).replicas);
  CHECK(counts == std::set<int>{1, 2, 3});
  ModelParams single;
  auto before = shapeGen(sc, km, single);
  for (uint64_t i = 0; i < 20; ++i) {
    Schedule a = materialize(generateCase(before, 7, i).value(), sc, km, 7, single);
    Schedule b = materialize(generateCase(gen, 7, i).value(), sc, km, 7, single);
    b.replicas = 1;
    for (auto& c : b.client) c.replica = 0, c.split = false;
    CHECK(a.summary() == b.summary()); // the routes are drawn after the rest: the same requests and faults
  }
}

namespace {

/// A history of a consumer c1 and a relay r1: (process, verb, summary) in order.
std::vector<Op> withRelay(const std::vector<std::tuple<std::string, std::string, std::string>>& steps) {
  History h;
  h.append("harness", ops::Plan{});
  std::map<std::pair<std::string, std::string>, int> k;
  for (const auto& [process, verb, summary] : steps) {
    nlohmann::json v{{"index", 0}, {"type", "step"}, {"process", process},
                     {"value", {{"server", "pg"}, {"verb", verb}, {"k", ++k[{process, verb}]}, {"outcome", "ok"}, {"summary", summary}}}};
    if (verb == "XACK") v["value"]["acked"] = nlohmann::json::array({"1-0"});
    h.append(process, v.get<Op>().record);
  }
  return h.ops();
}

} // namespace

TEST_CASE("a relay's steps make a model of their own, and materialize draws r1's points from it") {
  using S = std::vector<std::tuple<std::string, std::string, std::string>>;
  // One event: the consumer's COMMIT and XACK; the relay polls (an empty poll first), then sends one row.
  S one{{"r1", "SELECT", "SELECT 0"}, {"c1", "COMMIT", "COMMIT"}, {"c1", "XACK", ""}, {"r1", "SELECT", "SELECT 1"},
        {"r1", "BEGIN", "BEGIN"}, {"r1", "UPDATE", "UPDATE 1"}, {"r1", "COMMIT", "COMMIT"}, {"r1", "SELECT", "SELECT 0"}};
  S two = one;
  for (const auto& s : S{{"c1", "COMMIT", "COMMIT"}, {"c1", "XACK", ""}, {"r1", "SELECT", "SELECT 1"},
                         {"r1", "BEGIN", "BEGIN"}, {"r1", "UPDATE", "UPDATE 1"}, {"r1", "COMMIT", "COMMIT"}})
    two.push_back(s);
  KillModel km = KillModel::learn(withRelay(one), 1, withRelay(two), 2);
  // The consumer's model knows no relay step: COMMIT#k of the run is the consumers' alone.
  CHECK(km.bound("COMMIT", 2) == 2);
  CHECK(km.bound("UPDATE", 2) == 0);
  REQUIRE(km.relay());
  CHECK(km.relay()->bound("UPDATE", 3) == 3);
  CHECK(km.relay()->bound("SELECT", 2) == 2); // polls that found rows; the empty ones are left out
  CHECK(km.toJson().contains("r1"));

  auto sc = builtin("wallet");
  Shape s;
  s.events.resize(2);
  Shape::Kill atRelay, atConsumer;
  atRelay.process = 1; // with one consumer: draw mod 2 == 1 is r1
  atRelay.verb = 2;    // the relay's verbs in order of first step: SELECT, BEGIN, UPDATE, COMMIT
  atConsumer.verb = 0;
  s.kills = {atRelay, atConsumer};
  Schedule x = materialize(s, sc, km, 1);
  REQUIRE(x.faults.size() == 2);
  CHECK(x.faults[0].str() == "r1:after:UPDATE#1");
  CHECK(x.faults[1].str() == "after:COMMIT#1");
  // Without a relay the same draws name consumers only.
  Schedule y = materialize(s, sc, KillModel::learn(stepsHistory({{"COMMIT"}, {"XACK", "ok", true}}), 1,
                                                   stepsHistory({{"COMMIT"}, {"XACK", "ok", true}, {"COMMIT"}, {"XACK", "ok", true}}), 2),
                           1);
  for (const auto& f : y.faults) CHECK(f.process.empty());

  // A sweep's trace names the relay's points by its own k, and skips its polls of an empty outbox.
  Trace t = traceOf(withRelay(two));
  std::vector<std::string> relayPoints;
  for (const auto& p : t.points)
    if (p.process == "r1") relayPoints.push_back(p.fault.str());
  CHECK(relayPoints == std::vector<std::string>{"r1:before:SELECT#2", "r1:after:SELECT#2", "r1:before:BEGIN#1",
                                                "r1:after:BEGIN#1", "r1:before:UPDATE#1", "r1:after:UPDATE#1",
                                                "r1:before:COMMIT#1", "r1:after:COMMIT#1", "r1:before:SELECT#4",
                                                "r1:after:SELECT#4", "r1:before:BEGIN#2", "r1:after:BEGIN#2",
                                                "r1:before:UPDATE#2", "r1:after:UPDATE#2", "r1:before:COMMIT#2",
                                                "r1:after:COMMIT#2"});
}
