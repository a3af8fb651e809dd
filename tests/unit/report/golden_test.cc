// Golden files: report.json and JUnit XML are pure functions of recorded histories and reports; their
// output is compared with tests/golden/ after normalising times, pids, ports, UUIDs, entry ids and paths.
#include "report/junit.h"

#include "fixtures.h"
#include "json_schema.h"

#include <catch2/catch.hpp>

using namespace idem;
using namespace idem::testing;

TEST_CASE("golden: the run report of dedup-valkey killed at after:SET#3") {
  auto report = runReportOf("dedup-valkey-after-SET3.history.json", "wallet");
  CHECK(report["verdict"] == "fail");
  REQUIRE(report["violations"].size() == 1);
  CHECK(report["violations"][0]["kind"] == "lost");
  CHECK(report["violations"][0]["kill_point"] == "after:SET#3");
  CHECK_NOTHROW(requireValidReport(report, "run report"));
  Normaliser norm(std::map<std::string, std::string>{{IDEM_SOURCE_DIR, "repo"}});
  std::string diff = compareGolden("run-dedup-valkey-after-SET3.report.json", norm(report));
  INFO(diff);
  CHECK(diff.empty());
}

TEST_CASE("golden: the run report of simple (a retry applied twice)") {
  auto report = runReportOf("simple-default.history.json", "wallet");
  CHECK(report["verdict"] == "fail");
  CHECK(report["violations"][0]["kind"] == "duplicate");
  CHECK_NOTHROW(requireValidReport(report, "run report"));
  Normaliser norm(std::map<std::string, std::string>{{IDEM_SOURCE_DIR, "repo"}});
  std::string diff = compareGolden("run-simple.report.json", norm(report));
  INFO(diff);
  CHECK(diff.empty());
}

TEST_CASE("golden: JUnit XML of a run, a sweep and a comparison") {
  struct Case {
    const char* golden;
    nlohmann::json report;
  };
  std::vector<Case> cases = {
      {"run-dedup-valkey-after-SET3.junit.xml", runReportOf("dedup-valkey-after-SET3.history.json", "wallet")},
      {"sweep-dedup-valkey.junit.xml", loadInput("sweep-dedup-valkey.report.json")},
      {"compare-customer-city.junit.xml", loadInput("compare-customer-city.report.json")},
  };
  for (const auto& c : cases) {
    Normaliser norm;
    std::string raw = junitXml(c.report);
    INFO(c.golden);
    CHECK(xmlError(raw).empty());
    std::string xml = norm.text(raw);
    std::string diff = compareGolden(c.golden, xml);
    INFO(diff);
    CHECK(diff.empty());
  }
}

TEST_CASE("golden: the recorded sweep and compare reports match the schema") {
  for (const char* name : {"sweep-dedup-valkey.report.json", "compare-customer-city.report.json"}) {
    INFO(name);
    CHECK_NOTHROW(requireValidReport(loadInput(name), name));
  }
}
