// Races end fail, not flaky: the shrinker keeps only counterexamples that fail in every replay when their
// processes or requests run at once; the deterministic shapes of a failure (no holds, one consumer, a
// burst sent one after another) keep shrinking as the failure did; a hold is released only at a step that
// can conflict with the held one. Fake targets are pure functions of the schedule (and of a call count,
// for the nondeterministic ones).
#include "model_util.h"

#include "search/reductions.h"
#include "search/search.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>

using namespace idem;
using namespace idem::testing;

namespace {

int holdsOf(const Schedule& s) {
  return static_cast<int>(std::count_if(s.faults.begin(), s.faults.end(), [](const Fault& f) { return f.kind == "hold"; }));
}

CaseResult verdict(bool fail) {
  CaseResult o;
  o.verdict = fail ? Verdict::Fail : Verdict::Pass;
  if (fail) o.kinds = {"duplicate"};
  return o;
}

/// dedupTableModel with what its verbs' steps touch, as KillModel::learn finds them in a trace.
KillModel racyModel() {
  return KillModel::fromLines({{"XREADGROUP", {2, 0}}, {"XAUTOCLAIM", {1, 0}}, {"BEGIN", {0, 1}}, {"SELECT", {0, 1}},
                               {"INSERT", {0, 1}}, {"UPDATE", {0, 1}}, {"COMMIT", {0, 1}}, {"XACK", {0, 1}}},
                              {{"XREADGROUP", {"stream"}}, {"XAUTOCLAIM", {"stream"}}, {"XACK", {"stream"}},
                               {"SELECT", {"pg:seen_events"}}, {"INSERT", {"pg:seen_events"}},
                               {"UPDATE", {"pg:wallets"}}, {"COMMIT", {"pg:*"}}});
}

ModelParams racyParams() {
  ModelParams p;
  p.minConsumers = 1;
  p.maxConsumers = 2;
  p.maxKills = 0;
  return p;
}

/// The wallet scenario under racyModel and racyParams: generator and materializer (seed 3).
struct Racy {
  Scenario sc = builtin("wallet");
  KillModel km = racyModel();
  ModelParams p = racyParams();
  rc::Gen<Shape> gen = shapeGen(sc, km, p);
  Schedule mat(const Shape& s) const { return materialize(s, sc, km, 3, p); }
  std::function<Schedule(const Shape&)> materializer() const {
    return [this](const Shape& s) { return mat(s); };
  }
};

} // namespace

TEST_CASE("the shrinker takes a concurrent candidate only when it fails in every replay, and reports the last one that did") {
  const Racy r0;
  const auto& gen = r0.gen;
  const auto mat = r0.materializer();
  // A race: with a hold it fails every time; two consumers without one fail two runs in three (the order
  // is left to timing); one consumer never fails (right in every sequential history).
  int calls = 0;
  BatchEval racy = [&](const std::vector<Schedule>& ss) {
    std::vector<CaseResult> out;
    for (const auto& s : ss) {
      const bool timing = calls++ % 3 != 2;
      out.push_back(verdict(s.consumers >= 2 && (holdsOf(s) > 0 || timing)));
    }
    return out;
  };
  int found = 0, fooled = 0;
  for (uint64_t i = 0; i < 400 && found < 4; ++i) {
    auto c = generateCase(gen, 3, i);
    Schedule s = mat(c.value());
    if (s.consumers < 2 || holdsOf(s) == 0) continue;
    ++found;
    auto r = shrinkFailure(c, verdict(true), mat, racy, {2, 500, 50, 3});
    INFO(s.summary() << " -> " << r.schedule.summary());
    CHECK(r.schedule.consumers == 2);
    CHECK(holdsOf(r.schedule) >= 1); // never the smaller flaky one without a hold
    for (const auto& a : r.accepted) CHECK(holdsOf(a) >= 1);
    CHECK(r.schedule.events.size() == 1);
    // The control: confirmed by one run only (two failures in a row), the race without its hold gets in.
    fooled += holdsOf(shrinkFailure(c, verdict(true), mat, racy, {2, 500, 50, 1}).schedule) == 0;
  }
  CHECK(found == 4);
  CHECK(fooled >= 1);
}

TEST_CASE("a concurrent candidate is confirmed by every replay at once, and one consumer is reached when it fails too") {
  const Racy r0;
  const auto& gen = r0.gen;
  const auto mat = r0.materializer();
  std::map<size_t, int> runsOf; // batch size -> how many evaluations had it
  BatchEval always = [&](const std::vector<Schedule>& ss) {
    runsOf[ss.size()]++;
    std::vector<CaseResult> out;
    for (const auto& s : ss) out.push_back(verdict(!s.events.empty()));
    return out;
  };
  for (uint64_t i = 0; i < 200; ++i) {
    auto c = generateCase(gen, 9, i);
    Schedule s = mat(c.value());
    if (s.consumers < 2) continue;
    auto r = shrinkFailure(c, verdict(true), mat, always, {1, 500, 5, 4});
    CHECK(r.schedule.consumers == 1); // one consumer fails too: the shrink reaches it
    CHECK(r.runs > 0);
    CHECK(runsOf[4] >= 1); // the concurrent candidates were confirmed by four runs at once
    return;
  }
  FAIL("no schedule with two consumers among 200");
}

TEST_CASE("a shrink stops before its next batch once told to stop, and says so") {
  const Racy r0;
  const auto mat = r0.materializer();
  size_t batches = 0;
  BatchEval always = [&](const std::vector<Schedule>& ss) {
    ++batches;
    std::vector<CaseResult> out;
    for (const auto& s : ss) out.push_back(verdict(!s.events.empty()));
    return out;
  };
  for (uint64_t i = 0; i < 200; ++i) {
    auto c = generateCase(r0.gen, 9, i);
    if (mat(c.value()).events.size() < 3) continue;
    ShrinkLimits limits{1, 500, 5, 1};
    batches = 0;
    const auto whole = shrinkFailure(c, verdict(true), mat, always, limits);
    if (batches < 4) continue; // a shrink of a few batches at least
    REQUIRE(whole.stopped.empty()); // a local minimum
    batches = 0;
    limits.stop = [&] { return batches >= 1; }; // a signal during the first batch
    const auto cut = shrinkFailure(c, verdict(true), mat, always, limits);
    CHECK(cut.stopped == "interrupted");
    CHECK(batches <= 2); // that batch, and the confirmation of a candidate it accepted
    CHECK(cut.runs < whole.runs);
    return;
  }
  FAIL("no schedule among 200 whose shrink takes four batches");
}

TEST_CASE("deterministic shapes: one consumer, no holds, each hold removed, and shrinking goes on from them") {
  auto sc = builtin("wallet");
  auto km = racyModel();
  const ModelParams p = racyParams();
  auto gen = shapeGen(sc, km, p);
  bool seen = false;
  for (uint64_t i = 0; i < 400 && !seen; ++i) {
    auto c = generateCase(gen, 5, i);
    const Shape s = c.value();
    if (s.consumers < 2 || s.holds.size() < 2) continue;
    seen = true;
    auto rs = deterministicShapes(c, p);
    std::vector<std::string> names;
    for (const auto& r : rs) names.push_back(r.what);
    CHECK(names == std::vector<std::string>{"one consumer", "no holds", "hold 1 removed", "hold 2 removed"});
    Schedule one = materialize(rs[0].shape.value(), sc, km, 5, p);
    CHECK(one.consumers == 1);
    CHECK(holdsOf(one) == 0);
    CHECK(one.inflight() == 0);
    CHECK(!concurrent(one));
    CHECK(rs[1].shape.value().holds.empty());
    CHECK(rs[1].shape.value().consumers == 2);
    CHECK(rs[2].shape.value().holds.size() == s.holds.size() - 1);
    // The reduction is a shrink tree: its shrinks keep the change.
    auto shrinks = rs[0].shape.shrinks();
    for (int n = 0; n < 10; ++n) {
      auto next = shrinks.next();
      if (!next) break;
      CHECK(next->value().consumers == 1);
      CHECK(next->value().holds.empty());
    }
  }
  CHECK(seen);
  // Nothing at once: nothing to reduce.
  Shape plain;
  plain.events.resize(1);
  CHECK(deterministicShapes(rc::shrinkable::just(plain), p).empty());
}

TEST_CASE("deterministic shapes: a burst with another payload becomes sends one after another, the last the mismatch") {
  auto sc = builtin("orders");
  KillModel km;
  ModelParams p;
  Shape s;
  s.events.resize(2);
  s.events[0].draws = {0, 0, 0, 0};
  s.events[1].draws = {1, 1, 1, 1};
  Shape::Request burst;
  burst.kind = 1;
  burst.copies = 3;
  burst.mismatch = true;
  s.requests = {burst};
  Schedule before = materialize(s, sc, km, 1, p);
  REQUIRE(before.client.size() == 1);
  CHECK(before.client[0].str() == "burst 3 of 1 +2");
  CHECK(concurrent(before));
  auto rs = deterministicShapes(rc::shrinkable::just(s), p);
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].what == "requests one after another, each answered, no fault");
  Schedule after = materialize(rs[0].shape.value(), sc, km, 1, p);
  std::vector<std::string> requests;
  for (const auto& op : after.client) requests.push_back(op.str());
  CHECK(requests == std::vector<std::string>{"send 1", "send 1", "send key 1 body 2"});
  CHECK(!concurrent(after));
}

TEST_CASE("deterministic shapes: a send that times out is answered first with no fault, then with its faults") {
  auto sc = builtin("orders");
  KillModel km = KillModel::fromLines({{"COMMIT", {0, 1}}});
  ModelParams p;
  Shape s;
  s.events.resize(2);
  s.events[1].draws = {1, 1, 1, 1};
  Shape::Request first, retry;
  retry.wait = 1; // a timeout: the next request arrives while this one is in flight
  retry.mismatch = true;
  s.requests = {first, retry};
  s.kills = {Shape::Kill{}};
  Schedule before = materialize(s, sc, km, 1, p);
  CHECK(concurrent(before));
  CHECK(before.faults.size() == 1);
  auto rs = deterministicShapes(rc::shrinkable::just(s), p);
  REQUIRE(rs.size() == 2);
  Schedule plain = materialize(rs[0].shape.value(), sc, km, 1, p);
  CHECK(plain.client[1].str() == "send key 1 body 2");
  CHECK(plain.faults.empty());
  CHECK(!concurrent(plain));
  Schedule killed = materialize(rs[1].shape.value(), sc, km, 1, p);
  CHECK(rs[1].what == "requests one after another, each answered");
  CHECK(killed.faults.size() == 1);
  CHECK(!concurrent(killed));
}

TEST_CASE("a drawn hold is released only at a step that can conflict with the held one, else by idleness") {
  auto sc = builtin("wallet");
  auto km = racyModel();
  CHECK(km.conflicting("SELECT") == std::vector<std::string>{"SELECT", "INSERT", "COMMIT"});
  CHECK(km.conflicting("UPDATE") == std::vector<std::string>{"UPDATE", "COMMIT"});
  CHECK(km.conflicting("COMMIT") == std::vector<std::string>{"SELECT", "INSERT", "UPDATE", "COMMIT"});
  CHECK(km.conflicting("XACK") == std::vector<std::string>{"XREADGROUP", "XAUTOCLAIM", "XACK"});
  CHECK(km.conflicting("BEGIN").empty());
  ModelParams p = racyParams();
  p.minConsumers = 2;
  auto gen = shapeGen(sc, km, p);
  int released = 0, idle = 0;
  for (uint64_t i = 0; i < 300; ++i) {
    Schedule s = materialize(generateCase(gen, 7, i).value(), sc, km, 7, p);
    for (const auto& f : s.faults) {
      if (f.kind != "hold") continue;
      if (f.args.size() != 3) {
        idle += f.args.empty();
        continue;
      }
      ++released;
      const std::string until = f.args[2].substr(0, f.args[2].find('#'));
      const auto ok = km.conflicting(f.verb);
      INFO(f.str());
      CHECK(std::find(ok.begin(), ok.end(), until) != ok.end());
    }
  }
  CHECK(released > 20);
  CHECK(idle > 20);
}

TEST_CASE("what a step may conflict on: its tables, a COMMIT's transaction, the stream, a key family") {
  auto step = [](std::string server, std::string verb, std::string detail, std::vector<std::string> tables = {}) {
    ops::Step s;
    s.server = std::move(server);
    s.verb = std::move(verb);
    s.detail = std::move(detail);
    s.tables = std::move(tables);
    return s;
  };
  using Set = std::set<std::string>;
  CHECK(KillModel::resourcesOf(step("pg", "INSERT", "INSERT INTO seen_events ...", {"seen_events"})) == Set{"pg:seen_events"});
  CHECK(KillModel::resourcesOf(step("pg", "COMMIT", "COMMIT")) == Set{"pg:*"});
  CHECK(KillModel::resourcesOf(step("pg", "BEGIN", "BEGIN")).empty());
  CHECK(KillModel::resourcesOf(step("valkey", "XAUTOCLAIM", "XAUTOCLAIM s g c2 20 0-0")) == Set{"stream"});
  CHECK(KillModel::resourcesOf(step("valkey", "SET", "SET seen:1f2e NX")) == Set{"valkey:seen:"});
  CHECK(KillModel::resourcesOf(step("valkey", "EXEC", "EXEC")) == Set{"valkey:*", "stream"});
  // A script's second word is its text or its SHA, no key: it may touch any key and the stream.
  CHECK(KillModel::resourcesOf(step("valkey", "EVAL", "EVAL \"redis.call('XACK', KEYS[1] ...\" 1 s")) ==
        Set{"valkey:*", "stream"});
  CHECK(KillModel::resourcesOf(step("valkey", "EVALSHA", "EVALSHA 9a3f 1 s g 1-0")) == Set{"valkey:*", "stream"});
  CHECK(KillModel::resourcesOf(step("valkey", "PING", "PING")).empty());
}
