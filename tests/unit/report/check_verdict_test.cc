// The verdict rules shared by a command and the merge of its shards (report/check_verdict.h): fault
// coverage counted per verb and kind, and each rule of check's verdict with the note that explains it.
#include "report/check_verdict.h"

#include "verdict_util.h"

#include <catch2/catch.hpp>


using namespace idem;

using idem::testing::addRun;

namespace {

bool noted(const CheckDecision& d, const std::string& text) { return idem::testing::noted(d.notes, text); }

} // namespace

TEST_CASE("fault coverage counts planned and fired faults per verb and kind, and runs that lost one") {
  FaultCoverage c;
  addRun(c, {"after:COMMIT#2", "before:XACK#1"}, {"after:COMMIT#2"});
  addRun(c, {"after:COMMIT#1"}, {"after:COMMIT#1"});
  addRun(c, {}, {});
  CHECK(c.planned() == 3);
  CHECK(c.fired() == 2);
  CHECK(c.runsWithKills == 2);
  CHECK(c.runsWithLoss == 1);
  CHECK(c.neverFired() == std::vector<std::string>{"XACK"});
  CHECK(c.toJson()["COMMIT"] == nlohmann::json{{"planned", 2}, {"fired", 2}});
  CHECK(c.byKindJson()["kill"]["XACK"] == nlohmann::json{{"planned", 1}, {"fired", 0}});
  CHECK(c.text() == "kill: COMMIT 2/2, XACK 0/1");
}

TEST_CASE("check's verdict names a verb never reached with its count and fewer than half the faults fired") {
  CheckCounts c;
  c.runs = c.passed = c.runsRequested = 3;
  addRun(c.coverage, {"after:COMMIT#1"}, {"after:COMMIT#1"});
  addRun(c.coverage, {"after:SET#4"}, {});
  addRun(c.coverage, {"after:SET#5"}, {});
  CheckDecision d = decideCheck(c, nullptr, std::nullopt, {"earlier"});
  CHECK(d.verdict == Verdict::Unknown);
  CHECK(d.notes.front() == "earlier");
  CHECK(noted(d, "only 1 of 3 planned faults fired (below half)"));
  CHECK(noted(d, "never reached a SET step where a fault was asked for (2 planned, 0 fired)"));
  CHECK(noted(d, "2 runs had a fault that never fired"));
}

TEST_CASE("points unreached in runs of several consumers count as coverage loss and not as a verb never reached") {
  // c2's fourth SET was not reached: c1 did that work. Only runs of one process count in the two rules.
  CheckCounts c;
  c.runs = c.passed = c.runsRequested = 4;
  addRun(c.coverage, {"after:COMMIT#1"}, {"after:COMMIT#1"}, 2);
  addRun(c.coverage, {"kill:c2:after:SET#4"}, {}, 2);
  addRun(c.coverage, {"kill:c2:after:SET#5"}, {}, 2);
  addRun(c.coverage, {"kill:c1:after:XACK#3"}, {}, 2);
  CHECK(c.coverage.unreached() == 3);
  CHECK(c.coverage.neverFired().empty());
  CHECK(c.coverage.text() == "kill: COMMIT 1/1, SET 0/2, XACK 0/1"); // every planned point is still shown
  CheckDecision d = decideCheck(c, nullptr, std::nullopt);
  CHECK(d.verdict == Verdict::Pass);
  CHECK(noted(d, "3 runs had a fault that never fired"));
  CHECK(noted(d, "3 of them ran several processes, and their 3 faults were at a process's k-th step of a verb which "
                "that process never reached"));
  // Counted by run: one run of two processes with two faults unreached.
  CheckCounts two;
  two.runs = two.passed = two.runsRequested = 1;
  addRun(two.coverage, {"kill:c2:after:SET#4", "kill:c2:after:SET#5"}, {}, 2);
  CHECK(noted(decideCheck(two, nullptr, std::nullopt), "1 run had a fault that never fired"));
  CHECK(noted(decideCheck(two, nullptr, std::nullopt), "1 of them ran several processes, and their 2 faults were"));

  // The same points in runs of one process: the target never reached them.
  CheckCounts one = c;
  one.coverage = FaultCoverage{};
  addRun(one.coverage, {"after:COMMIT#1"}, {"after:COMMIT#1"});
  addRun(one.coverage, {"after:SET#4"}, {}, 2);
  addRun(one.coverage, {"after:SET#5"}, {});
  addRun(one.coverage, {"after:SET#6"}, {});
  d = decideCheck(one, nullptr, std::nullopt);
  CHECK(d.verdict == Verdict::Unknown);
  CHECK(noted(d, "never reached a SET step where a fault was asked for (3 planned, 0 fired)"));
  CHECK(noted(d, "only 1 of 4 planned faults fired (below half, leaving out 1 unreached in runs of several processes)"));

  // No fault fired at all: unknown, however many processes ran.
  CheckCounts none = c;
  none.coverage = FaultCoverage{};
  addRun(none.coverage, {"kill:c2:after:SET#4"}, {}, 2);
  d = decideCheck(none, nullptr, std::nullopt);
  CHECK(d.verdict == Verdict::Unknown);
  CHECK(noted(d, "no fault fired in any run (1 planned)"));
}

TEST_CASE("check's verdict: interrupted is unknown first, a decided error stays, a finding fails or is flaky") {
  CheckCounts c;
  c.runs = c.passed = 2;
  c.runsRequested = 10;
  addRun(c.coverage, {"after:COMMIT#1"}, {"after:COMMIT#1"});
  CHECK(decideCheck(c, nullptr, std::nullopt).verdict == Verdict::Pass);

  CheckCounts late = c;
  late.outOfTime = true;
  CheckDecision d = decideCheck(late, nullptr, std::nullopt);
  CHECK(d.verdict == Verdict::Pass);
  CHECK(noted(d, "the time budget ended the search after 2 of 10 runs"));

  CheckCounts cut = c;
  cut.interrupted = "SIGINT";
  d = decideCheck(cut, nullptr, std::nullopt, {"earlier"});
  CHECK(d.verdict == Verdict::Unknown);
  CHECK(d.notes.front().rfind("interrupted by SIGINT: the 2 runs", 0) == 0);

  CHECK(decideCheck(c, nullptr, Verdict::Error).verdict == Verdict::Error);

  CheckFinding f;
  f.verdicts = {"fail", "fail"};
  CHECK(decideCheck(c, &f, std::nullopt).verdict == Verdict::Fail);
  f.flaky = true;
  f.verdicts = {"fail", "pass"};
  f.tried = {{"one consumer", "3 events", {"pass", "fail"}}};
  d = decideCheck(c, &f, std::nullopt);
  CHECK(d.verdict == Verdict::Flaky);
  CHECK(noted(d, "changed between runs (fail, pass)"));
  CHECK(noted(d, "\"one consumer\" (3 events) did not fail every time either: pass, fail"));
  CHECK(noted(d, "nor did a smaller schedule its shrinking reached"));

  // A found schedule whose replays disagreed, shrunk to one that failed every time: a fail, and it says so.
  CheckFinding shrunk;
  shrunk.foundVerdicts = {"fail", "pass", "fail", "pass"};
  shrunk.verdicts = {"fail", "fail", "fail", "fail", "fail"};
  d = decideCheck(c, &shrunk, std::nullopt);
  CHECK(d.verdict == Verdict::Fail);
  CHECK(noted(d, "the schedule the search found failed in 2 of its 4 runs (fail, pass, fail, pass); the one reported "
                 "failed in every run"));
}

TEST_CASE("sweep's and compare's verdicts: a failure beats an unknown beats a pass") {
  CHECK(sweepVerdict({}) == Verdict::Pass);
  CHECK(sweepVerdict({.notFired = 1}) == Verdict::Unknown);
  CHECK(sweepVerdict({.failed = 1, .unknown = 1}) == Verdict::Fail);
  CHECK(sweepVerdict({.traceUsable = false}) == Verdict::Unknown);
  CHECK(sweepVerdict({.noFaults = true}) == Verdict::Unknown);
  CHECK(sweepVerdict({.failed = 1, .error = true}) == Verdict::Error);
  CHECK(sweepVerdict({.error = true, .interrupted = true}) == Verdict::Unknown);
  CHECK(sweepVerdict({.failed = 1, .interrupted = true}) == Verdict::Fail);
  CHECK(foldCellVerdict(Verdict::Pass, Verdict::NotApplicable) == Verdict::Pass);
  CHECK(foldCellVerdict(Verdict::Pass, Verdict::Unknown) == Verdict::Unknown);
  CHECK(foldCellVerdict(Verdict::Fail, Verdict::Unknown) == Verdict::Fail);
  CHECK(foldCellVerdict(Verdict::Unknown, Verdict::Fail) == Verdict::Fail);
  CHECK(compareVerdict(true, true) == Verdict::Fail);
  CHECK(compareVerdict(false, true) == Verdict::Unknown);
  CHECK(compareVerdict(false, false) == Verdict::Pass);
}
