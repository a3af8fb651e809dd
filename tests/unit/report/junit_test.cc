// JUnit XML: one testcase per kill point / checker / target x class, failures carrying the diagnosis,
// undecided results as errors, everything escaped and well-formed.
#include "report/junit.h"

#include "fixtures.h"
#include "json_schema.h"
#include "unit/checkers/history_builder.h"

#include <catch2/catch.hpp>

using namespace idem;
using namespace idem::testing;
using json = nlohmann::json;


TEST_CASE("junit: a sweep has one testcase per kill point and the baseline, failures carry the diagnosis") {
  json report = loadInput("sweep-dedup-valkey.report.json");
  std::string xml = junitXml(report);
  CHECK(xmlError(xml).empty());
  CHECK(occurrences(xml, "<testcase ") == report["sweep"]["points"].size() + 1);
  CHECK(occurrences(xml, "<failure ") == 30);
  CHECK(xml.find("name=\"after:SET#1\">\n      <failure type=\"lost\" message=\"lost: balance w1: event 1 lost:") != std::string::npos);
}

TEST_CASE("junit: undecided results are errors, never passes") {
  json report = loadInput("sweep-dedup-valkey.report.json");
  report["sweep"]["points"][0]["verdict"] = "unknown";
  report["sweep"]["points"][0]["fired"] = false;
  report["sweep"]["points"][1]["verdict"] = "unknown";
  std::string xml = junitXml(report);
  CHECK(occurrences(xml, "<error ") == 2);
  CHECK(xml.find("<error type=\"unknown\" message=\"unknown: the kill point never fired\"") != std::string::npos);
  CHECK(xmlError(xml).empty());
}

TEST_CASE("junit: a run has one testcase per checker, a comparison one per target x class that applies") {
  std::string run = junitXml(runReportOf("dedup-valkey-after-SET3.history.json", "wallet"));
  CHECK(occurrences(run, "<testcase ") == 6); // 1 invariant + broker, process, faults, run, observation
  CHECK(occurrences(run, "<failure ") == 1);
  json cmp = loadInput("compare-customer-city.report.json");
  size_t applicable = 0, failing = 0;
  for (const auto& c : cmp["compare"]["cells"]) {
    applicable += c["verdict"] != "n/a";
    failing += c["verdict"] == "fail";
  }
  std::string xml = junitXml(cmp);
  CHECK(occurrences(xml, "<testcase ") == applicable);
  CHECK(occurrences(xml, "<failure ") == failing);
  CHECK(xmlError(xml).empty());
}

TEST_CASE("junit: names and messages from targets are escaped, control characters and bad UTF-8 removed") {
  json report = runReportOf("dedup-valkey-after-SET3.history.json", "wallet");
  std::string hostile = "<b>x</b> \"q\" & 'a' ]]> \x01\x1b[31m \xff";
  report["target"] = hostile;
  report["runs"][0]["checks"][0]["violations"][0]["message"] = hostile;
  std::string xml = junitXml(report);
  INFO(xml);
  CHECK(xmlError(xml).empty());
  CHECK(xml.find("&lt;b&gt;x&lt;/b&gt; &quot;q&quot; &amp; &#39;a&#39; ]]&gt;") != std::string::npos);
  CHECK(xml.find('\x01') == std::string::npos);
  CHECK(xml.find('\x1b') == std::string::npos);
}

TEST_CASE("junit: writeJunit creates the folder and writes the file") {
  auto dir = scratch("junit");
  writeJunit((dir / "sub" / "j.xml").string(), runReportOf("simple-default.history.json", "wallet"));
  CHECK(readFile(dir / "sub" / "j.xml").find("<testsuites ") != std::string::npos);
}

TEST_CASE("junit: a report without runs (a check that passed) is one testcase with the report's verdict") {
  json report = runReportOf("simple-default.history.json", "wallet");
  report["command"] = "check";
  report["runs"] = json::array();
  report["verdict"] = "pass";
  std::string xml = junitXml(report);
  CHECK(occurrences(xml, "<testcase ") == 1);
  CHECK(occurrences(xml, "<error ") == 0);
  report["verdict"] = "unknown";
  CHECK(occurrences(junitXml(report), "<error type=\"unknown\"") == 1);
}

TEST_CASE("junit: a payments run names the sink's checks, and its report matches the schema") {
  // c1 commits event 1's payment, then is killed before its call; c2 calls another path, rejected.
  const Scenario sc = builtin("payments");
  HistoryBuilder b(sc);
  b.initial(json{{"balance", json::array()}, {"booked", json::array()}, {"sink:booked", json::array()}});
  const std::string e1 = b.send(1, {{"wallet", "w1"}, {"amount", "5000"}});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", {e1});
  b.step("c1", "pg", "BEGIN");
  b.sql("c1", "INSERT", "INSERT INTO payments VALUES ($1, $2, $3)", {"payments"}, "INSERT 0 1");
  b.step("c1", "pg", "COMMIT");
  b.kill("c1", "after:COMMIT#1");
  b.spawn("c2");
  b.read("c2", "XAUTOCLAIM", {e1});
  ops::Call wrong; // c2 calls another path: rejected, nothing charged
  wrong.id = 1;
  wrong.method = "POST";
  wrong.path = "/refunds";
  wrong.ref = b.eventId(1);
  wrong.digest = "00000000000000ab";
  wrong.outcome = "rejected";
  wrong.status = 404;
  b.h.append("sink", wrong);
  b.step("c2", "sink", "CALL", "POST /refunds key= ref=" + b.eventId(1));
  b.ack("c2", {e1});
  const json booked = json::array({json::array({b.eventId(1)})});
  b.finalOp(json{{"balance", json::array({json::array({"w1", "995000"})})}, {"booked", booked}, {"sink:booked", booked}});
  auto ops = b.ops();
  std::get<ops::Plan>(ops.front().record).sinkPolicy = "honour";
  const json report = runReportOfOps(ops, "payments");
  requireValidReport(report, "the payments run");
  const std::string xml = junitXml(report);
  CHECK(xmlError(xml).empty());
  for (const char* name : {"sink:exactly-once", "sink:agreement", "sink:key-stable"})
    CHECK(xml.find(std::string("name=\"") + name + "\"") != std::string::npos);
  CHECK(xml.find("<failure type=\"never-charged\"") != std::string::npos);
  CHECK(xml.find("<failure type=\"booked-not-charged\"") != std::string::npos);
}
