/// The sink end to end (docs/target-contract.md, "The sink"): consumers of scenario payments that charge each
/// event at idemproof's sink through their own proxy, the CALL steps and the sink's call records.
#include "support.h"

#include "../unit/report/golden.h"

#include <catch2/catch.hpp>

#include <map>

using namespace itest;

namespace {

/// The ops of type `type` of the report's first run.
std::vector<nlohmann::json> opsOf(const Result& r, const std::string& type) {
  std::vector<nlohmann::json> out;
  if (!r.report.is_object() || r.report["runs"].empty()) return out;
  for (const auto& op : r.report["runs"][0]["history"])
    if (op["type"] == type) out.push_back(op);
  return out;
}

/// The outcome of step VERB#k of the first run ("" when there is none).
std::string stepOutcome(const Result& r, const std::string& verb, int k) {
  for (const auto& op : opsOf(r, "step"))
    if (op["value"]["verb"] == verb && op["value"]["k"] == k) return op["value"]["outcome"];
  return "";
}

} // namespace

TEST_CASE("sink: calls recorded, a kill after CALL#1 charges twice without a key, replays with one") {
  // Keyed: every event charged once, through the proxy (CALL steps) and recorded by the sink.
  Result keyed = clean({"run", "--target", target("sink-keyed"), "--scenario", "payments", "--events", "2"});
  INFO(keyed.out << keyed.err);
  CHECK(keyed.status == 0);
  REQUIRE(opsOf(keyed, "plan").size() == 1);
  CHECK(opsOf(keyed, "plan")[0]["value"]["sink_policy"] == "honour");
  CHECK(verbsOn(keyed, "sink") == std::set<std::string>{"CALL"});
  std::map<std::string, int> executed;
  for (const auto& c : opsOf(keyed, "call")) {
    CHECK(c["process"] == "sink");
    CHECK(c["value"]["key_header"] == true);
    if (c["value"]["outcome"] == "executed") executed[c["value"]["ref"]]++;
  }
  CHECK(executed.size() == 2);
  for (const auto& [ref, n] : executed) CHECK(n == 1);
  const auto finals = opsOf(keyed, "final");
  REQUIRE(finals.size() == 1);
  CHECK(finals[0]["value"]["observed"]["sink:booked"].size() == 2);

  // Without a key: the redelivered event is charged again (two executions for one reference).
  Result twice = clean({"run", "--target", target("sink-call-then-commit"), "--scenario", "payments", "--events", "1",
                        "--crash", "kill:after:CALL#1"});
  INFO(twice.out << twice.err);
  CHECK(stepOutcome(twice, "CALL", 1) == "killed-after");
  CHECK(stepOutcome(twice, "CALL", 2) == "ok");
  const auto calls = opsOf(twice, "call");
  REQUIRE(calls.size() == 2);
  CHECK(calls[0]["value"]["ref"] == calls[1]["value"]["ref"]);
  CHECK(calls[0]["value"]["outcome"] == "executed");
  CHECK(calls[1]["value"]["outcome"] == "executed");
  CHECK(calls[1]["value"]["execution"] == 2);

  // With the key, the same kill: the second call is the first one's answer replayed.
  Result replayed = clean({"run", "--target", target("sink-keyed"), "--scenario", "payments", "--events", "1",
                           "--crash", "kill:after:CALL#1"});
  INFO(replayed.out << replayed.err);
  CHECK(replayed.status == 0);
  CHECK(stepOutcome(replayed, "CALL", 1) == "killed-after");
  const auto again = opsOf(replayed, "call");
  REQUIRE(again.size() == 2);
  CHECK(again[1]["value"]["outcome"] == "replayed");
  CHECK(again[1]["value"]["execution"] == 1);
  bool summary = false;
  for (const auto& op : opsOf(replayed, "step"))
    summary = summary || op["value"]["summary"] == "200 replayed";
  CHECK(summary);
}

TEST_CASE("sink: --sink-policy is checked, and refused for a scenario without a sink") {
  Result bad = idemproof({"run", "--target", target("sink-keyed"), "--scenario", "payments", "--sink-policy", "maybe"},
                         0, false);
  CHECK(bad.status == 2);
  CHECK(bad.err.find("--sink-policy") != std::string::npos);
  Result none = idemproof({"run", "--target", target("dedup-table"), "--sink-policy", "ignore"}, 0, false);
  CHECK(none.status == 2);
  CHECK(none.err.find("--sink-policy: scenario 'wallet' has no sink") != std::string::npos);
}

TEST_CASE("sink: verdicts of the reference, outbox, Python and Node consumers at their call and commit") {
  // The default payments schedule (events 1-4, event 2 sent again by the producer), at once.
  auto rs = cleanAll({
      {"run", "--scenario", "payments", "--target", target("sink-call-then-commit"), "--crash", "kill:after:CALL#1"},
      {"run", "--scenario", "payments", "--target", target("sink-commit-then-call"), "--events", "1", "--crash", "kill:after:COMMIT#1"},
      {"run", "--scenario", "payments", "--target", target("sink-keyed"), "--crash", "kill:after:CALL#1", "--sink-policy", "ignore"},
      {"run", "--scenario", "payments", "--target", target("sink-outbox"), "--crash", "kill:r1:after:CALL#1"},
      {"run", "--scenario", "payments", "--target", target("sink-outbox"), "--crash", "kill:r1:after:CALL#1", "--sink-policy", "ignore"},
      {"run", "--scenario", "payments", "--target", testTarget("py-sink-keyed"), "--crash", "kill:after:CALL#2", "--crash", "drop:after:CALL#4"},
      {"run", "--scenario", "payments", "--target", testTarget("py-sink-call-then-commit"), "--events", "2", "--crash", "kill:after:CALL#2"},
      {"run", "--scenario", "payments", "--target", testTarget("node-sink-keyed"), "--crash", "kill:after:CALL#2", "--crash",
       "error:after:CALL#4:500"},
      {"run", "--scenario", "payments", "--target", testTarget("node-sink-call-then-commit"), "--events", "2", "--crash", "kill:after:CALL#2"},
  });
  // `pattern`: the anti-pattern the violation at `point` is classified as ("": none).
  auto charged = [](const Result& r, const std::string& point, const std::string& pattern = "") {
    INFO(r.out << r.err);
    CHECK(r.status == 1);
    bool named = false, classified = false; // (the producer's retry of event 2 is charged twice by some, too)
    for (const auto& v : violations(r.report, "charged-twice")) {
      if (v["message"].get<std::string>().find(point) == std::string::npos) continue;
      named = true;
      classified = classified || (v["pattern"].is_object() && v["pattern"].value("id", "") == pattern);
    }
    CHECK(named);
    if (!pattern.empty()) CHECK(classified);
  };
  auto passes = [](const Result& r) {
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.report["verdict"] == "pass");
  };
  {
    INFO("call then commit: killed after the charge, the redelivered event is charged again");
    charged(rs[0], "after:CALL#1", "sink-call-commit-order");
  }
  {
    INFO("commit then call: killed after the commit, booked and never charged");
    const Result& r = rs[1];
    INFO(r.out << r.err);
    CHECK(r.status == 1);
    auto v = onlyViolation(r, "booked-not-charged");
    CHECK(v["message"].get<std::string>().find("after:COMMIT#1") != std::string::npos);
    CHECK(v["pattern"].is_object());
    CHECK(v["pattern"].value("id", "") == "sink-call-commit-order");
  }
  {
    INFO("keyed, against a provider that ignores keys: charged twice, the key its only dedup");
    charged(rs[2], "after:CALL#1", "sink-key-only");
  }
  {
    INFO("the outbox: the relay killed after its charge, its replacement charges with the same key: replayed");
    const Result& r = rs[3];
    passes(r);
    int replayed = 0;
    for (const auto& op : r.report["runs"][0]["history"])
      if (op["type"] == "call" && op["value"]["outcome"] == "replayed") ++replayed;
    CHECK(replayed == 1);
    for (const auto& op : r.report["runs"][0]["history"])
      if (op["type"] == "final") CHECK(op["value"].value("outbox_pending", -1) == 0);
  }
  {
    INFO("the outbox against a provider that ignores keys: the relay's second charge executes");
    charged(rs[4], "r1:after:CALL#1", "sink-key-only");
  }
  {
    INFO("Python, keyed: a kill after a charge and a drop of another's answer are replayed");
    passes(rs[5]);
  }
  {
    INFO("Python, call then commit: charged twice");
    charged(rs[6], "after:CALL#2", "sink-call-commit-order");
  }
  {
    INFO("Node, keyed: a kill after a charge and a 500 after another are replayed");
    passes(rs[7]);
  }
  {
    INFO("Node, call then commit: charged twice");
    charged(rs[8], "after:CALL#2", "sink-call-commit-order");
  }
}

TEST_CASE("sink: compare shows each target under both sink policies, sink-keyed passing one and failing the other") {
  // Kills only, one point per class, no generated class: a few schedules per column.
  Result r = clean({"compare", "--scenario", "payments", "--target", target("sink-keyed"), "--runs", "0", "--per-class", "1",
                    "--faults", "kill", "--workers", "2"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  const auto& cmp = r.report["compare"];
  CHECK(cmp["sink_policies"] == nlohmann::json::array({"honour", "ignore"}));
  REQUIRE(cmp["targets"].size() == 2);
  std::map<std::string, nlohmann::json> columns;
  for (const auto& t : cmp["targets"]) columns[t["sink_policy"]] = t;
  CHECK(columns["honour"]["name"] == "sink-keyed");
  CHECK(columns["honour"]["verdict"] == "pass");
  CHECK(columns["ignore"]["verdict"] == "fail");
  CHECK(columns["ignore"]["kinds"].dump().find("charged-twice") != std::string::npos);
  // Each failing cell replays under its policy: the schedule file carries it, and so does the command.
  int failing = 0;
  for (const auto& c : cmp["cells"]) {
    if (c["verdict"] != "fail") continue;
    ++failing;
    CHECK(c["sink_policy"] == "ignore");
    const std::string replay = c.value("replay", "");
    CHECK(replay.find("--sink-policy ignore") != std::string::npos);
    const std::string file = replay.substr(replay.find("replay ") + 7, replay.find(" --target") - replay.find("replay ") - 7);
    CHECK(nlohmann::json::parse(idem::testing::readFile(file))["sink_policy"] == "ignore");
  }
  CHECK(failing > 0);
  for (const auto& run : r.report["runs"]) CHECK(run["id"].get<std::string>().rfind("sink-keyed/ignore/", 0) == 0);
  // The terminal table: the policy under each column.
  CHECK(r.out.find("under each sink policy (honour, ignore)") != std::string::npos);
  CHECK(r.out.find("  sink policy") != std::string::npos);
  // The page: the target's name over its two policies.
  std::string html = idem::testing::readFile(r.reportDir / "report.html");
  CHECK(html.find("<th colspan=\"2\">sink-keyed</th>") != std::string::npos);
  CHECK(html.find(">ignore</th>") != std::string::npos);
}
