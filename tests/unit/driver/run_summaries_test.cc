// driver/run_summaries.h: a check's run summaries spooled to a temporary file come back in order, byte for
// byte the JSON report.json lists, pass after pass; memory keeps only the page's runs.
#include "driver/run_summaries.h"

#include <catch2/catch.hpp>

using namespace idem;

namespace {

RunSummary summary(uint32_t run) {
  RunSummary r;
  r.run = run;
  r.verdict = run % 7 == 0 ? Verdict::Fail : Verdict::Pass;
  r.planned = run % 3 == 0 ? "after:COMMIT#3 drop:before:XACK#1" : "after:XACK#" + std::to_string(run);
  r.firedMask = run % 5 == 0 ? 0 : 3; // every fifth run lost its faults (coverage loss)
  if (r.verdict == Verdict::Fail) r.kinds = "duplicate lost";
  if (run == 42) r.reason = "line one\nline \"two\"\t\x01 end"; // control characters stay on one line
  return r;
}

} // namespace

TEST_CASE("run summaries: read back in order as report.json lists them, twice, with more added between") {
  RunSummaries s(10);
  for (uint32_t run = 1; run <= 300; ++run) s.add(summary(run));
  CHECK(s.size() == 300);
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < s.size(); ++i) REQUIRE(s.at(i) == summary(static_cast<uint32_t>(i + 1)).toJson());
  CHECK(s.at(0) == summary(1).toJson());
  s.add(summary(301)); // appended after a read pass left the file position in the middle
  CHECK(s.size() == 301);
  for (size_t i = 0; i < s.size(); ++i) REQUIRE(s.at(i) == summary(static_cast<uint32_t>(i + 1)).toJson());
  CHECK(s.at(0)["run"] == 1);
  CHECK_THROWS_AS(s.at(5), std::logic_error); // out of order: a pass starts at 0
}

TEST_CASE("run summaries: memory keeps only the first runs that did not pass or lost a fault") {
  RunSummaries s(10);
  for (uint32_t run = 1; run <= 300; ++run) s.add(summary(run));
  REQUIRE(s.notPassed().size() == 11); // the page lists 10 and says there are more
  std::vector<uint32_t> runs;
  for (const auto& j : s.notPassed()) runs.push_back(j["run"].get<uint32_t>());
  CHECK(runs == std::vector<uint32_t>{5, 7, 10, 14, 15, 20, 21, 25, 28, 30, 35});
  RunSummaries empty(10);
  CHECK(empty.size() == 0);
  CHECK(empty.notPassed().empty());
}
