// report.json's "compare" section as a typed value (report/compare_section.h): a recorded report's section
// comes back equal through from_json and its JSON text unchanged, members a report may lack read as their
// defaults, and a mistyped or missing member or a verdict that is none does not read.
#include "report/compare_section.h"

#include "fixtures.h"

#include <catch2/catch.hpp>

using namespace idem;
using namespace idem::testing;
using json = nlohmann::json;

TEST_CASE("compare section: a recorded one comes back equal, its JSON text unchanged") {
  const json j = loadInput("compare-customer-city.report.json").at("compare");
  const CompareSection s = j.get<CompareSection>();
  CHECK(json(s).dump() == j.dump());
  CHECK(json(s).get<CompareSection>() == s);
  REQUIRE(s.targets.size() == 2);
  CHECK(s.targets[0].name == "versioned-naive");
  CHECK(s.targets[0].verdict == Verdict::Fail);
  CHECK(s.targets[0].kinds == std::set<std::string>{"stale-version"});
  CHECK(s.cells.size() == s.classes.size() * s.targets.size());
  const CompareCell* first = s.cell("default", "versioned-naive");
  REQUIRE(first);
  CHECK(first->verdict == Verdict::Fail);
  CHECK(first->example == "versioned-naive/default");
  CHECK(!first->points); // not a kill, fault or race class
  CHECK(s.cell("default", "no-such-target") == nullptr);
  CHECK(s.costs.at(1).roundTripsPerMsg == 4.0); // a whole number stays a double: "4.0"
}

TEST_CASE("compare section: the members only kill, fault and race cells have stay absent elsewhere") {
  CompareCell retry;
  retry.cls = "retry";
  retry.target = "t";
  retry.verdict = Verdict::Pass;
  retry.schedules = 3;
  CompareCell kill = retry;
  kill.cls = "kill:COMMIT>XACK";
  kill.verdict = Verdict::Fail;
  kill.kinds = {"duplicate"};
  kill.failed = 1;
  kill.example = "t/after:COMMIT#2";
  kill.points = std::vector<std::string>{"after:COMMIT#1", "after:COMMIT#2", "before:XACK#3"};
  kill.faultsPlanned = 3;
  kill.faultsFired = 2;
  CHECK(json(retry).dump() ==
        R"({"class":"retry","example":"","failed":0,"kinds":[],"schedules":3,"target":"t","unknown":0,"verdict":"pass"})");
  CHECK(json(kill).dump() ==
        R"({"class":"kill:COMMIT>XACK","example":"t/after:COMMIT#2","failed":1,"faults_fired":2,"faults_planned":3,)"
        R"("kinds":["duplicate"],"points":["after:COMMIT#1","after:COMMIT#2","before:XACK#3"],"schedules":3,)"
        R"("target":"t","unknown":0,"verdict":"fail"})");
  for (const CompareCell& c : {retry, kill}) CHECK(json(c).get<CompareCell>() == c);
  // A cell of n/a: no schedule of its class for the target.
  const json na = {{"class", "race:dup"}, {"target", "t"}, {"verdict", "n/a"}};
  CHECK(na.get<CompareCell>().verdict == Verdict::NotApplicable);
  CHECK(na.get<CompareCell>().schedules == 0);
}

TEST_CASE("compare section: a sink policy axis: a column per target and policy, each cell's replay keeps it") {
  CompareSection s;
  s.classes = {{"default", "schedule", "default schedule", ""}};
  s.sinkPolicies = {"honour", "ignore"};
  for (const char* policy : {"honour", "ignore"}) {
    CompareTarget t;
    t.name = "sink-keyed";
    t.sinkPolicy = policy;
    t.verdict = std::string(policy) == "honour" ? Verdict::Pass : Verdict::Fail;
    s.targets.push_back(t);
    CompareCell c;
    c.cls = "default";
    c.target = "sink-keyed";
    c.sinkPolicy = policy;
    c.verdict = t.verdict;
    c.schedules = 1;
    if (c.verdict == Verdict::Fail) {
      c.failed = 1;
      c.kinds = {"charged-twice"};
      c.example = "sink-keyed/ignore/default";
      c.replay = "idemproof replay schedules/sink-keyed_ignore_default.json --target targets/sink-keyed --sink-policy ignore";
    }
    s.cells.push_back(c);
    s.costs.push_back({"sink-keyed", policy, 5, 40, 90000, 55.5, 8.0});
  }
  const json j = s;
  CHECK(j.at("sink_policies") == json::array({"honour", "ignore"}));
  CHECK(j.at("targets").at(1).at("sink_policy") == "ignore");
  CHECK(j.at("cells").at(1).at("replay").get<std::string>().find("--sink-policy ignore") != std::string::npos);
  CHECK(!j.at("cells").at(0).contains("replay")); // no example, nothing to replay
  CHECK(j.at("costs").at(0).at("sink_policy") == "honour");
  CHECK(j.get<CompareSection>() == s);
  CHECK(s.cell("default", "sink-keyed", "ignore")->verdict == Verdict::Fail);
  CHECK(s.cell("default", s.targets[0])->verdict == Verdict::Pass);
  CHECK(s.cell("default", "sink-keyed") == nullptr);
  // Without the axis none of these members is written: reports of comparisons without a sink are unchanged.
  const json plain = loadInput("compare-customer-city.report.json").at("compare");
  CHECK(!plain.contains("sink_policies"));
  CHECK(json(plain.get<CompareSection>()).dump() == plain.dump());
}

TEST_CASE("compare section: members a report may lack read as their defaults") {
  const CompareSection s = json{{"classes", json::array()}, {"targets", json::array()}, {"cells", json::array()}}
                               .get<CompareSection>();
  CHECK(s == CompareSection{});
  const CompareTarget t = json{{"name", "t"}, {"verdict", "pass"}}.get<CompareTarget>();
  CHECK(t.unknownCells == 0);
  CHECK(t.manifest.empty());
}

TEST_CASE("compare section: a mistyped or missing member, or a verdict that is none, does not read") {
  const json good = loadInput("compare-customer-city.report.json").at("compare");
  for (const char* pointer : {"/classes", "/cells", "/targets", "/costs", "/seed", "/runs_per_class", "/classes/0/label",
                              "/cells/0/kinds", "/cells/0/failed", "/cells/4/points", "/targets/1/unknown_cells",
                              "/costs/0/msgs_per_s", "/costs/0/wall_us"}) {
    json j = good;
    j[json::json_pointer(pointer)] = json{{"x", 1}};
    CAPTURE(pointer);
    CHECK_THROWS_AS(j.get<CompareSection>(), json::exception);
  }
  for (const char* pointer : {"/classes", "/cells/0/class", "/cells/0/verdict", "/targets/0/name", "/costs/1/target"}) {
    CAPTURE(pointer);
    CHECK_THROWS_AS(without(good, pointer).get<CompareSection>(), json::exception);
  }
  json j = good;
  j["cells"][0]["verdict"] = "maybe";
  CHECK_THROWS_AS(j.get<CompareSection>(), std::invalid_argument);
  j = good;
  j["targets"][0]["verdict"] = "green";
  CHECK_THROWS_AS(j.get<CompareSection>(), std::invalid_argument);
}
