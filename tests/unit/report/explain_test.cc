// `idemproof explain`: the text for a failing run (its anti-pattern, the steps from its history, the fix),
// "no known pattern" when none fits, and bad input refused with the path named.
#include "report/explain.h"

#include "core/error.h"
#include "fixtures.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

using namespace idem;
using namespace idem::testing;
using Catch::Matchers::Contains;

TEST_CASE("explain: a failing run's anti-pattern, its steps and the fix", "[explain]") {
  auto report = runReportOf("dedup-valkey-after-SET3.history.json", "wallet");
  const std::string out = explainReport(report);
  CHECK_THAT(out, Contains("anti-pattern: dedup mark outside the effect's transaction (dedup-outside-transaction)"));
  CHECK_THAT(out, Contains("why: c1 marked event 3 as processed in Valkey (SET#3) before its effect"));
  CHECK_THAT(out, Contains("c1 SET#3  SET seen:"));
  CHECK_THAT(out, Contains("c1 fault after:SET#3"));
  CHECK_THAT(out, Contains("fix: write the mark in the effect's transaction"));

  for (auto& run : report["runs"])
    for (auto& v : run["violations"]) v.erase("pattern");
  CHECK_THAT(explainReport(report), Contains("anti-pattern: no known pattern"));
}

TEST_CASE("explain: a report with no failing run says so", "[explain]") {
  nlohmann::json report{{"verdict", "pass"}, {"runs", nlohmann::json::array()}};
  CHECK(explainReport(report) == "no failing run in this report (verdict pass)\n");
}

TEST_CASE("explain: bad input names the path", "[explain]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "idemproof-explain-test";
  fs::create_directories(dir);
  CHECK_THROWS_WITH(readReportForExplain(dir / "absent"), Contains((dir / "absent").string()));
  CHECK_THROWS_AS(readReportForExplain(dir / "absent"), UsageError);
  {
    std::ofstream(dir / "report.json") << "{\"verdict\": \"pass\"}";
  }
  CHECK_THROWS_WITH(readReportForExplain(dir), Contains((dir / "report.json").string()) && Contains("not an idemproof report"));
  {
    std::ofstream(dir / "report.json") << "not json";
  }
  CHECK_THROWS_AS(readReportForExplain(dir), UsageError);
  fs::remove_all(dir);
}
