// report.json's "check" section as a typed value (report/check_section.h): the section check writes comes
// back equal through from_json and its JSON text unchanged, the members a report may lack read as their
// defaults, and a mistyped member or a counterexample without its found run does not read.
#include "report/check_section.h"

#include <catch2/catch.hpp>

using namespace idem;
using json = nlohmann::json;

namespace {

/// A check section as check writes it (every member), with a counterexample and one run listed.
json written() {
  return json::parse(R"({
    "consumers": [1, 2], "counterexample": {
      "file": "out/counterexample.json", "flaky": false, "flaky_candidates": 1,
      "found": {"run": 7, "schedule": {"events": [{"n": 1}]}, "summary": "3 events, kill after:COMMIT#2",
                "verdicts": ["fail", "fail"]},
      "reduced": null, "replay_command": "idemproof replay out/counterexample.json", "replays": ["fail", "fail"],
      "schedule": {"events": [{"n": 1}]}, "shrink_runs": 12, "shrink_steps": 3, "summary": "1 event, kill after:COMMIT#1",
      "tried": [{"summary": "1 event", "verdicts": ["fail"], "what": "one consumer"}], "verdicts": ["fail", "fail", "fail"]},
    "coverage": {"COMMIT": {"fired": 3, "planned": 4}},
    "coverage_by_kind": {"kill": {"COMMIT": {"fired": 3, "planned": 4}}},
    "coverage_summary": {"coverage_loss_examples": [{"not_fired": ["after:COMMIT#4"], "run": 2, "schedule": "2 events"}],
                         "fired": 3, "never_fired": [], "planned": 4, "runs_with_coverage_loss": 1, "runs_with_kills": 4},
    "errors": 0, "failed": 1, "faults": ["kill"], "flaky": 1, "interrupted": null,
    "kill_model": {"COMMIT": {"per_event": 1}}, "max_events": 3,
    "notes": ["the counterexample failed in every replay"], "out_of_time": false, "passed": 5, "replays": 3,
    "run_summaries": [{"fired": [], "planned": ["after:COMMIT#4"], "reason": "a planned fault never fired", "run": 2,
                       "verdict": "unknown"},
                      {"fired": ["after:COMMIT#2"], "kinds": ["duplicate"], "planned": ["after:COMMIT#2"], "run": 7,
                       "verdict": "fail"}],
    "runs": 7, "runs_requested": 100, "seed": 18446744073709551615, "seed_given": true, "unknown": 1})");
}

} // namespace

TEST_CASE("a check section as check writes it comes back equal through from_json, its JSON text unchanged") {
  const json j = written();
  const CheckSection s = j.get<CheckSection>();
  CHECK(json(s).dump() == j.dump());
  CHECK(json(s).get<CheckSection>() == s);
  CHECK(s.consumers == std::pair{1, 2});
  REQUIRE(s.counterexample);
  CHECK(s.counterexample->found.run == 7);
  CHECK(s.counterexample->finding().flakyCandidates == 1);
  CHECK(s.runSummaries.at(1).kinds == std::vector<std::string>{"duplicate"});
  // The coverage counted again from its members is the one the section says.
  CheckSection again = s;
  again.setCoverage(s.faultCoverage());
  CHECK(again == s);
  // Interrupted, without a counterexample: null members stay null.
  json quiet = j;
  quiet["counterexample"] = nullptr;
  quiet["interrupted"] = "SIGINT";
  CHECK(json(quiet.get<CheckSection>()).dump() == quiet.dump());
  CHECK(quiet.get<CheckSection>().counts().interrupted == "SIGINT");
}

TEST_CASE("a check section lacking members reads them as their defaults") {
  const CheckSection s = json{{"runs", 3}, {"passed", 3}}.get<CheckSection>();
  CHECK(s.runs == 3);
  CHECK(s.passed == 3);
  CHECK(s.failed == 0);
  CHECK(!s.counterexample);
  CHECK(s.runSummaries.empty());
  CHECK(json::array().get<CheckSection>() == CheckSection{});
}

TEST_CASE("a check section with a mistyped member, or a counterexample without its found run, does not read") {
  for (const char* pointer : {"/runs", "/passed", "/out_of_time", "/consumers", "/notes/0", "/coverage/COMMIT/fired",
                              "/coverage_summary/runs_with_coverage_loss", "/counterexample/flaky",
                              "/counterexample/tried/0/verdicts", "/run_summaries/0/planned"}) {
    json j = written();
    j[json::json_pointer(pointer)] = json{{"x", 1}};
    CAPTURE(pointer);
    CHECK_THROWS_AS(j.get<CheckSection>(), json::exception);
  }
  json j = written();
  j["counterexample"]["found"].erase("run");
  CHECK_THROWS_AS(j.get<CheckSection>(), json::exception);
  j = written();
  j["counterexample"].erase("found");
  CHECK_THROWS_AS(j.get<CheckSection>(), json::exception);
  j = written();
  j["coverage_summary"]["coverage_loss_examples"][0].erase("run");
  CHECK_THROWS_AS(j.get<CheckSection>(), json::exception);
  j = written();
  j["run_summaries"][0]["verdict"] = "maybe";
  CHECK_THROWS_AS(j.get<CheckSection>(), std::invalid_argument);
}
