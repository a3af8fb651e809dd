// The kill model learned from traces, the classification of runs (the coverage rule), the parallel
// search (the first failure does not depend on the number of workers) and the shrinker, with fake
// targets that are pure functions of the schedule.
#include "model_util.h"

#include "search/search.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

using namespace idem;
using namespace idem::testing;

TEST_CASE("KillModel counts ok steps up to the last ack and fits a line per verb") {
  auto small = stepsHistory({{"XREADGROUP", "ok", false, true}, {"XREADGROUP"}, {"SET"}, {"BEGIN"}, {"COMMIT"},
                             {"XACK", "ok", true}, {"XAUTOCLAIM", "ok", false, true}, {"XREADGROUP", "cut"}});
  auto counts = KillModel::reliableCounts(small);
  CHECK(counts["XREADGROUP"] == 2);
  CHECK(counts.count("XAUTOCLAIM") == 0); // after the last ack: timing-dependent
  CHECK(counts["XACK"] == 1);
  std::vector<StepSpec> steps{{"XREADGROUP", "ok", false, true}, {"XREADGROUP"}};
  for (int e = 0; e < 5; ++e) {
    steps.push_back({"SET"});
    if (e < 4) { // the fifth entry is a duplicate: no transaction
      steps.push_back({"BEGIN"});
      steps.push_back({"COMMIT"});
    }
    steps.push_back({"XACK", "ok", true});
  }
  auto large = stepsHistory(steps);
  auto km = KillModel::learn(small, 1, large, 5);
  CHECK(km.verbs() == std::vector<std::string>{"XREADGROUP", "SET", "BEGIN", "COMMIT", "XACK"});
  CHECK(km.bound("XREADGROUP", 1) == 2);
  CHECK(km.bound("XREADGROUP", 9) == 2);
  CHECK(km.bound("SET", 1) == 1);
  CHECK(km.bound("SET", 6) == 6);
  CHECK(km.bound("COMMIT", 1) == 1);
  CHECK(km.bound("COMMIT", 6) == 4); // 1 + 0.75 * 5: below the 6 a run without duplicates reaches
  CHECK(km.bound("XAUTOCLAIM", 3) == 0);
  CHECK(km.maxBound(6) == 6);
  CHECK(km.toJson()["COMMIT"]["per_event"] == 0.75);
}

namespace {

CheckResult result(const std::string& checker, Verdict v, std::vector<std::string> kinds = {}) {
  CheckResult r;
  r.checker = checker;
  r.verdict = v;
  for (const auto& k : kinds) r.violations.push_back({k});
  if (v == Verdict::Unknown) r.error = "why";
  return r;
}

std::vector<Op> killOps(const std::vector<std::string>& points) {
  History h;
  for (const auto& p : points) h.append("c1", ops::FaultOp{Fault::parse(p), 9});
  return h.ops();
}

Schedule withKills(std::vector<std::string> points) {
  Schedule s;
  for (const auto& p : points) s.faults.push_back(Fault::parse(p));
  return s;
}

} // namespace

TEST_CASE("a kill point that never fired is coverage loss, never a failure, and hides none") {
  auto s = withKills({"after:COMMIT#2", "before:XACK#1"});
  auto fired = killOps({"after:COMMIT#2"});
  // Only the faults checker is unknown: a pass with coverage loss.
  auto o = classify(s, fired, {result("invariant:balance", Verdict::Pass), result("faults", Verdict::Unknown)}, "");
  CHECK(o.verdict == Verdict::Pass);
  CHECK(o.coverageLoss());
  REQUIRE(o.fired.size() == 1);
  CHECK(o.fired[0].str() == "after:COMMIT#2");
  // A violation still fails the run.
  o = classify(s, fired, {result("invariant:balance", Verdict::Fail, {"lost"}), result("faults", Verdict::Unknown)}, "");
  CHECK(o.verdict == Verdict::Fail);
  CHECK(o.kinds == std::set<std::string>{"lost"});
  // Any other unknown checker keeps the run unknown.
  o = classify(s, fired, {result("broker", Verdict::Unknown), result("faults", Verdict::Unknown)}, "");
  CHECK(o.verdict == Verdict::Unknown);
  CHECK(classify(s, fired, {}, "boom").verdict == Verdict::Error);

  // The coverage counts of such runs: tests/unit/report/check_verdict_test.cc.
}

TEST_CASE("the search reports the lowest failing case whatever the number of workers") {
  for (int workers : {1, 2, 4}) {
    std::atomic<int> calls{0};
    auto res = searchCases(100, workers, [&](int w, size_t i) {
      REQUIRE(w < workers);
      ++calls;
      std::this_thread::sleep_for(std::chrono::microseconds(i % 3 == 0 ? 800 : 100));
      CaseResult o;
      o.verdict = (i == 23 || i == 17 || i == 60) ? Verdict::Fail : Verdict::Pass;
      return o;
    });
    REQUIRE(res.firstFailure);
    CHECK(*res.firstFailure == 17);
    REQUIRE(res.failure);
    CHECK(res.failure->verdict == Verdict::Fail);
    CHECK(res.ran == 18);
    // One worker stops at the failure; with several, how many later cases start while case 17 runs is the
    // scheduler's choice (a loaded machine let 24 start with 4 workers): no bound is sure but the count.
    if (workers == 1) CHECK(calls.load() == 18);
    else CHECK(calls.load() <= 100);
  }
  auto none = searchCases(30, 2, [](int, size_t) { return CaseResult{Verdict::Pass}; });
  CHECK(!none.firstFailure);
  CHECK(none.ran == 30);
  int n = 0;
  auto timed = searchCases(30, 1, [](int, size_t) { return CaseResult{Verdict::Pass}; }, [&] { return ++n > 5; });
  CHECK(timed.outOfTime);
  CHECK(timed.ran == 5);
}

TEST_CASE("the search passes on each counted outcome once, in index order, up to the first failure, keeping none") {
  for (int workers : {1, 2, 4}) {
    std::vector<size_t> seen;
    std::vector<std::string> reasons;
    auto res = searchCases(
        200, workers,
        [&](int, size_t i) {
          // Uneven durations: later cases often finish before earlier ones.
          std::this_thread::sleep_for(std::chrono::microseconds(i % 7 == 0 ? 1500 : (i % 2) * 200));
          CaseResult o;
          o.verdict = i == 150 || i == 171 ? Verdict::Fail : Verdict::Pass;
          o.reason = "case " + std::to_string(i);
          return o;
        },
        {},
        [&](size_t i, const CaseResult& o) {
          seen.push_back(i);
          reasons.push_back(o.reason);
        });
    INFO(workers);
    REQUIRE(res.ran == 151);
    REQUIRE(seen.size() == 151);
    for (size_t i = 0; i < seen.size(); ++i) {
      CHECK(seen[i] == i);
      CHECK(reasons[i] == "case " + std::to_string(i));
    }
    CHECK(res.failure->reason == "case 150");
  }
  // Out of time: every case started is passed on, none after.
  std::vector<size_t> seen;
  int n = 0;
  auto timed = searchCases(
      50, 3, [](int, size_t) { return CaseResult{Verdict::Pass}; }, [&] { return ++n > 20; },
      [&](size_t i, const CaseResult&) { seen.push_back(i); });
  CHECK(timed.outOfTime);
  CHECK(seen.size() == timed.ran);
  for (size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == i);
}

TEST_CASE("a run summary keeps the verdict, the faults planned and fired, the kinds and the reason in report form") {
  CaseResult o;
  o.verdict = Verdict::Fail;
  o.kinds = {"lost", "duplicate"};
  o.planned = {Fault::parse("after:COMMIT#3", "t"), Fault::parse("drop:before:XACK#1", "t"), Fault::parse("before:SET#2", "t")};
  o.fired = {o.planned[2], o.planned[0]}; // in history order
  RunSummary r = RunSummary::of(41, o);
  CHECK(r.run == 42);
  CHECK(r.plannedFaults() == std::vector<std::string>{"after:COMMIT#3", "drop:before:XACK#1", "before:SET#2"});
  CHECK(r.firedFaults() == std::vector<std::string>{"after:COMMIT#3", "before:SET#2"}); // in planned order
  CHECK(r.toJson() == nlohmann::json{{"run", 42}, {"verdict", "fail"},
                                     {"planned", {"after:COMMIT#3", "drop:before:XACK#1", "before:SET#2"}},
                                     {"fired", {"after:COMMIT#3", "before:SET#2"}}, {"kinds", {"duplicate", "lost"}}});
  o.processes = 2; // a run of two consumers says so, for the coverage rules of check and merge
  CHECK(RunSummary::of(41, o).toJson()["processes"] == 2);
  CaseResult u;
  u.reason = "invariant:balance: no final read";
  auto j = RunSummary::of(0, u).toJson();
  CHECK(j == nlohmann::json{{"run", 1}, {"verdict", "unknown"}, {"planned", nlohmann::json::array()},
                            {"fired", nlohmann::json::array()}, {"reason", "invariant:balance: no final read"}});
}

TEST_CASE("a shape that failed every time with another violation is told apart from one that disagreed") {
  auto run = [](Verdict v, std::set<std::string> kinds) {
    CaseResult o;
    o.verdict = v;
    o.kinds = std::move(kinds);
    return o;
  };
  const std::set<std::string> found{"stuck-key"};
  const CaseResult mismatch = run(Verdict::Fail, {"replay-mismatch"});
  CHECK(failedAlikeOtherwise({mismatch, mismatch, mismatch}, found));
  CHECK(failedAlikeOtherwise({mismatch, run(Verdict::Fail, {"replay-mismatch", "double-effect"})}, found));
  CHECK_FALSE(failedAlikeOtherwise({}, found));
  CHECK_FALSE(failedAlikeOtherwise({mismatch, run(Verdict::Pass, {})}, found));            // passed once
  CHECK_FALSE(failedAlikeOtherwise({mismatch, run(Verdict::Fail, {"double-effect"})}, found)); // two others
  CHECK_FALSE(failedAlikeOtherwise({mismatch, run(Verdict::Fail, {"stuck-key"})}, found)); // the found one
  CHECK_FALSE(failedAlikeOtherwise({run(Verdict::Fail, {"replay-mismatch", "stuck-key"})}, found));
  CHECK_FALSE(failedAlikeOtherwise({run(Verdict::Unknown, {})}, found));
}

namespace {

/// A fake target: fails ("duplicate") when some event on wallet w2 is retried.
CaseResult fakeTarget(const Schedule& s) {
  CaseResult o;
  o.verdict = Verdict::Pass;
  for (const auto& e : s.events) {
    int sent = 0;
    for (const auto& x : s.stream) sent += x.event == e.n;
    if (sent > 1 && e.fields.at("wallet") == "w2") {
      o.verdict = Verdict::Fail;
      o.kinds = {"duplicate"};
    }
  }
  return o;
}

} // namespace

TEST_CASE("shrinking finds the smallest failing schedule and never takes a flaky candidate") {
  auto sc = builtin("wallet");
  auto km = dedupTableModel();
  auto gen = shapeGen(sc, km, {});
  auto mat = [&](const Shape& s) { return materialize(s, sc, km, 5); };
  BatchEval eval = [](const std::vector<Schedule>& ss) {
    std::vector<CaseResult> out;
    for (const auto& s : ss) out.push_back(fakeTarget(s));
    return out;
  };
  int found = 0;
  for (uint64_t i = 0; i < 60 && found < 5; ++i) {
    auto c = generateCase(gen, 5, i);
    auto first = fakeTarget(mat(c.value()));
    if (first.verdict != Verdict::Fail) continue;
    ++found;
    ShrinkLimits limits{2, 500};
    std::vector<std::pair<size_t, int>> told; // what check's progress line is told, batch after batch
    std::string lastKept;
    limits.onBatch = [&](size_t runs, int steps, const Schedule& kept) {
      told.emplace_back(runs, steps);
      lastKept = kept.summary();
    };
    auto r = shrinkFailure(c, first, mat, eval, limits);
    INFO(mat(c.value()).summary() << " -> " << r.schedule.summary());
    REQUIRE_FALSE(told.empty());
    CHECK(std::is_sorted(told.begin(), told.end()));
    CHECK(told.back() == std::make_pair(r.runs, r.steps));
    CHECK(lastKept == r.schedule.summary());
    CHECK(r.stopped.empty());
    CHECK(r.schedule.events.size() == 1);
    CHECK(r.schedule.stream.size() == 2);
    CHECK(r.schedule.faults.empty());
    CHECK(r.schedule.events[0].fields.at("amount") == "100");
    CHECK(r.schedule.events[0].fields.at("wallet") == "w2");
    CHECK(r.steps > 0);
    CHECK(r.flakyCandidates == 0);
  }
  CHECK(found == 5);

  // A target whose every second execution passes: candidates fail once, then pass their confirmation.
  int calls = 0;
  BatchEval flaky = [&](const std::vector<Schedule>& ss) {
    std::vector<CaseResult> out;
    for (const auto& s : ss) {
      CaseResult o = fakeTarget(s);
      if (calls++ % 2 == 1) o = CaseResult{Verdict::Pass};
      out.push_back(o);
    }
    return out;
  };
  bool tried = false;
  for (uint64_t i = 0; i < 1000 && !tried; ++i) { // bounded: a generator change must fail here, not hang
    auto c = generateCase(gen, 5, i);
    auto first = fakeTarget(mat(c.value()));
    if (first.verdict != Verdict::Fail) continue;
    tried = true;
    auto r = shrinkFailure(c, first, mat, flaky, {1, 500, 3});
    CHECK(r.steps == 0);
    CHECK(r.flakyCandidates == 3);
    CHECK(!r.stopped.empty());
    CHECK(nlohmann::json(r.schedule).dump() == nlohmann::json(mat(c.value())).dump());

    // The same start, its replays having disagreed: each candidate runs twice and is taken when one run
    // fails, so the descent reaches the smallest failure all the same; none of them failed every run.
    ShrinkLimits twice{1, 500, 3};
    twice.flakyStartTries = 2;
    calls = 0;
    r = shrinkFailure(c, first, mat, flaky, twice);
    CHECK(r.stopped.empty());
    CHECK(r.steps > 0);
    CHECK(r.schedule.events.size() == 1);
    REQUIRE(r.failedEveryRun.size() == r.accepted.size());
    CHECK(std::none_of(r.failedEveryRun.begin(), r.failedEveryRun.end(), [](bool b) { return b; }));

    // Where one-event schedules fail every time, the accepted ones of one event say so, the others not.
    BatchEval smallSure = [&](const std::vector<Schedule>& ss) {
      std::vector<CaseResult> out;
      for (const auto& s : ss) {
        CaseResult o = fakeTarget(s);
        if (s.events.size() > 1 && calls++ % 2 == 1) o = CaseResult{Verdict::Pass};
        out.push_back(o);
      }
      return out;
    };
    r = shrinkFailure(c, first, mat, smallSure, twice);
    REQUIRE(r.failedEveryRun.size() == r.accepted.size());
    REQUIRE_FALSE(r.accepted.empty());
    CHECK(r.failedEveryRun.back());
    for (size_t k = 0; k < r.accepted.size(); ++k)
      if (r.accepted[k].events.size() > 1) CHECK_FALSE(r.failedEveryRun[k]);
  }
  CHECK(tried);
}

TEST_CASE("at its local minimum the shrinker drops the faults that did not fire in the run kept, when it still fails") {
  auto sc = builtin("wallet");
  auto km = dedupTableModel();
  auto gen = shapeGen(sc, km, {});
  auto mat = [&](const Shape& s) { return materialize(s, sc, km, 5); };
  // A start with two faults or more, and no shrink of its own: the local minimum is the start.
  std::optional<rc::Shrinkable<Shape>> start;
  for (uint64_t i = 0; i < 1000 && !start; ++i) {
    auto c = generateCase(gen, 5, i);
    if (mat(c.value()).faults.size() >= 2) start = rc::shrinkable::just(c.value());
  }
  REQUIRE(start);
  const Schedule s = mat(start->value());
  const Fault firedOne = s.faults.front(); // only the first fault fires, in every run
  auto outcome = [&](const Schedule& x, bool fail) {
    CaseResult o;
    o.verdict = fail ? Verdict::Fail : Verdict::Pass;
    if (fail) o.kinds = {"duplicate"};
    o.planned = x.faults;
    if (std::find(x.faults.begin(), x.faults.end(), firedOne) != x.faults.end()) o.fired = {firedOne};
    return o;
  };
  size_t runs = 0;
  // Fails whatever its faults: the schedule of the fired fault alone is kept.
  BatchEval always = [&](const std::vector<Schedule>& ss) {
    std::vector<CaseResult> out;
    for (const auto& x : ss) out.push_back(outcome(x, true));
    runs += ss.size();
    return out;
  };
  auto r = shrinkFailure(*start, outcome(s, true), mat, always, {1, 500});
  CHECK(r.stopped.empty());
  CHECK(r.steps == 1);
  CHECK(r.runs == runs); // the candidate and its confirmation
  CHECK(runs >= 2);
  REQUIRE(r.schedule.faults.size() == 1);
  CHECK(r.schedule.faults.front() == firedOne);
  CHECK(r.schedule.events.size() == s.events.size());
  REQUIRE(r.accepted.size() == 1);
  CHECK(r.failedEveryRun.front());
  CHECK(withoutUnfired(s, outcome(s, true)).faults == r.schedule.faults);

  // Fails only with all of them (a fault that did not fire in one run may in another): nothing is dropped.
  BatchEval allOfThem = [&](const std::vector<Schedule>& ss) {
    std::vector<CaseResult> out;
    for (const auto& x : ss) out.push_back(outcome(x, x.faults.size() == s.faults.size()));
    return out;
  };
  r = shrinkFailure(*start, outcome(s, true), mat, allOfThem, {1, 500});
  CHECK(r.steps == 0);
  CHECK(r.runs == 1);
  CHECK(r.schedule.faults == s.faults);
  // Every fault fired: no candidate is left to run.
  CaseResult all = outcome(s, true);
  all.fired = s.faults;
  r = shrinkFailure(*start, all, mat, always, {1, 500});
  CHECK(r.runs == 0);
  CHECK(r.schedule.faults == s.faults);
}
