// The verdict of a check: fault coverage (no kill fired, a verb never reached) makes it unknown, a
// counterexample whose runs disagree is flaky, never a clean failure or a pass.
#include "driver/check.h"

#include "../report/verdict_util.h"

#include <catch2/catch.hpp>

using namespace idem;

using idem::testing::addRun;

namespace {

bool noted(const CheckSummary& s, const std::string& text) { return idem::testing::noted(s.notes, text); }

} // namespace

TEST_CASE("a check passes only when kill points fired for every verb asked for") {
  CheckSummary s;
  s.runs = s.passed = 2;
  addRun(s.coverage, {"after:COMMIT#1"}, {"after:COMMIT#1"});
  addRun(s.coverage, {"before:XACK#2"}, {"before:XACK#2"});
  decideVerdict(s);
  CHECK(s.verdict == Verdict::Pass);
  CHECK(s.notes.empty());

  CheckSummary none;
  none.runs = none.passed = 1;
  addRun(none.coverage, {}, {});
  decideVerdict(none);
  CHECK(none.verdict == Verdict::Unknown);
  CHECK(noted(none, "no fault fired"));

  CheckSummary unreached;
  unreached.runs = unreached.passed = 2;
  addRun(unreached.coverage, {"after:COMMIT#1"}, {"after:COMMIT#1"});
  addRun(unreached.coverage, {"after:SET#4"}, {});
  decideVerdict(unreached);
  CHECK(unreached.verdict == Verdict::Unknown);
  CHECK(noted(unreached, "never reached a SET step"));
  CHECK(noted(unreached, "coverage loss"));

  CheckSummary partial; // one point of a verb lost, others of it fired: coverage loss, still a pass
  partial.runs = partial.passed = 2;
  addRun(partial.coverage, {"after:COMMIT#1"}, {"after:COMMIT#1"});
  addRun(partial.coverage, {"after:COMMIT#9"}, {});
  decideVerdict(partial);
  CHECK(partial.verdict == Verdict::Pass);
  CHECK(noted(partial, "1 run had a fault that never fired"));

  CheckSummary unknown; // as `s`, with one unknown run
  unknown.runs = unknown.passed = 2;
  unknown.coverage = s.coverage;
  unknown.unknown = 1;
  unknown.firstProblem = "broker: why";
  decideVerdict(unknown);
  CHECK(unknown.verdict == Verdict::Unknown);
}

TEST_CASE("a counterexample fails cleanly only when every run of it failed alike") {
  CheckSummary s;
  s.runs = 3;
  s.failed = 1;
  s.cx = Counterexample{};
  s.cx->verdicts = {"fail", "fail", "fail", "fail", "fail"};
  decideVerdict(s);
  CHECK(s.verdict == Verdict::Fail);

  CheckSummary f = CheckSummary{};
  f.cx = Counterexample{};
  f.cx->flaky = true;
  f.cx->verdicts = {"fail", "fail", "pass", "fail"};
  decideVerdict(f);
  CHECK(f.verdict == Verdict::Flaky);
  CHECK(noted(f, "fail, fail, pass, fail"));
}

TEST_CASE("describeSchedule shows events, the stream with retries and phases, kills and restart") {
  Scenario sc = loadScenario("wallet", std::filesystem::path(IDEM_SOURCE_DIR) / "scenarios");
  Schedule s;
  s.events = {{1, {{"n", "1"}, {"wallet", "w1"}, {"amount", "100"}}}, {2, {{"n", "2"}, {"wallet", "w2"}, {"amount", "5"}}}};
  s.stream = {{1, 1}, {2, 1}, {1, 2}};
  s.faults = {Fault::parse("after:SET#1")};
  auto text = describeSchedule(s, sc, "  ");
  CHECK(text == "  events: 1 (wallet=w1 amount=100), 2 (wallet=w2 amount=5)\n"
                "  stream: 1 2 | phase 2: 1(retry)\n"
                "  faults: after:SET#1; restart new-name\n");
}
