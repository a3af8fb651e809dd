/// `idemproof check` and `idemproof replay` end to end on embedded servers: generated schedules find the
/// broken reference targets' bugs and shrink them, the printed replay command reproduces them, correct
/// targets pass with kill points that fired, a nondeterministic target is flaky, and the same seed gives
/// the same schedules. After each command: no process left and no temp dir.
#include "support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

using namespace itest;

namespace {

const nlohmann::json& counterexample(const Result& r) { return r.report["check"]["counterexample"]; }

std::set<std::string> kindsOf(const nlohmann::json& report) {
  std::set<std::string> kinds;
  for (const auto& v : report["violations"]) kinds.insert(v["kind"].get<std::string>());
  return kinds;
}

std::string writeFile(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / ("itest-check-" + lastTag());
  std::filesystem::create_directories(dir);
  auto p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

} // namespace

TEST_CASE("check: dedup-valkey with seed 1 loses a payment, shrinks it, and the replay command reproduces it",
          "[check]") {
  Result r = clean({"check", "--target", target("dedup-valkey"), "--scenario", "wallet", "--seed", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  CHECK(r.report["verdict"] == "fail");
  CHECK(r.report["command"] == "check");
  CHECK(r.report["check"]["seed"] == 1);
  const auto& cx = counterexample(r);
  CHECK(cx["schedule"]["events"].size() <= 2);
  CHECK(cx["schedule"]["faults"].size() == 1);
  CHECK(cx["verdicts"].size() >= 3);
  CHECK(kindsOf(r.report).count("lost") == 1);
  REQUIRE(r.report["runs"].size() == 1);
  CHECK(!r.report["runs"][0]["history"].empty());
  CHECK(std::filesystem::exists(cx["file"].get<std::string>()));
  CHECK(r.out.find("seed 1") != std::string::npos);

  auto args = replayArgs(r.out);
  CHECK(args.front() == "replay");
  Result again = clean(args);
  INFO(again.out << again.err);
  CHECK(again.status == 1);
  CHECK(again.report["command"] == "replay");
  CHECK(kindsOf(again.report).count("lost") == 1);
}

TEST_CASE("check: simple shrinks to one event with one retry or one kill", "[check]") {
  Result r = clean({"check", "--target", target("simple"), "--scenario", "wallet", "--seed", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  const auto& s = counterexample(r)["schedule"];
  CHECK(s["events"].size() == 1);
  size_t retries = s["stream"].size() - 1, kills = s["faults"].size();
  CHECK(retries + kills == 1);
  CHECK(kindsOf(r.report).count("duplicate") == 1);
}

TEST_CASE("check: dedup-table passes 25 schedules with kill points that fired, and the report keeps a summary "
          "of each run but no passing run's history", "[check]") {
  // The class sweep's runs and a dozen random schedules after them, every fault kind.
  Result r = clean({"check", "--target", target("dedup-table"), "--scenario", "wallet", "--runs", "25", "--seed", "5",
                    "--max-events", "5"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.report["verdict"] == "pass");
  const auto& c = r.report["check"];
  CHECK(c["runs"] == 25);
  CHECK(c["passed"] == 25);
  CHECK(c["counterexample"].is_null());
  CHECK(c["coverage_summary"]["fired"].get<int>() > 12);
  for (const auto& [verb, pf] : c["coverage"].items()) {
    INFO(verb);
    CHECK(pf["fired"].get<int>() > 0);
    CHECK(pf["fired"].get<int>() <= pf["planned"].get<int>());
  }
  CHECK(c["coverage"].contains("COMMIT"));
  CHECK(r.out.find("coverage: ") != std::string::npos);
  CHECK(r.report["runs"].empty()); // no history: every run passed
  // One summary per run, in index order, whose faults add up to the coverage.
  const auto& summaries = c["run_summaries"];
  REQUIRE(summaries.size() == 25);
  int fired = 0;
  for (size_t i = 0; i < summaries.size(); ++i) {
    const auto& s = summaries[i];
    CHECK(s["run"] == i + 1);
    CHECK(s["verdict"] == "pass");
    CHECK(s["fired"].size() <= s["planned"].size());
    CHECK(!s.contains("history"));
    fired += static_cast<int>(s["fired"].size());
  }
  CHECK(fired == c["coverage_summary"]["fired"].get<int>());
  // The page counts them; it lists only runs that did not pass or lost a fault.
  std::ifstream html(r.reportDir / "report.html");
  std::stringstream page;
  page << html.rdbuf();
  CHECK(page.str().find("25 runs of the search") != std::string::npos);
}

TEST_CASE("check: a check in which no kill point fired is unknown, not a pass", "[check]") {
  // Seed 1's first random schedule with one consumer has no kill point (the class sweep, whose runs always
  // have one, left out).
  Result r = clean({"check", "--target", target("dedup-table"), "--scenario", "wallet", "--runs", "1", "--seed", "1",
                    "--consumers", "1", "--no-class-sweep"});
  INFO(r.out << r.err);
  CHECK(r.status == 2);
  CHECK(r.report["verdict"] == "unknown");
  CHECK(r.out.find("no fault fired") != std::string::npos);
}

TEST_CASE("check: the same seed gives the same schedules with any number of workers", "[check]") {
  Result a = clean({"check", "--target", target("simple"), "--scenario", "wallet", "--seed", "8", "--workers", "1"});
  Result b = clean({"check", "--target", target("simple"), "--scenario", "wallet", "--seed", "8", "--workers", "2"});
  INFO(a.out << b.out);
  REQUIRE(a.status == 1);
  REQUIRE(b.status == 1);
  CHECK(counterexample(a)["found"] == counterexample(b)["found"]);
  CHECK(counterexample(a)["schedule"] == counterexample(b)["schedule"]);
  // Without --seed, one is drawn, printed and stored.
  Result c = clean({"check", "--target", target("simple"), "--scenario", "wallet", "--runs", "2", "--max-events", "1"});
  CHECK(c.out.find("--seed " + std::to_string(c.report["check"]["seed"].get<uint64_t>()) + " repeats it") !=
        std::string::npos);
  CHECK(c.report["check"]["seed_given"] == false);
}

TEST_CASE("replay: a saved schedule gives the saved verdict, a bad file is exit 2 naming it", "[check]") {
  // A version 1 file (kill points under "kills"), as earlier versions saved them: it still loads.
  std::string schedule = R"({"version": 1, "scenario": "wallet", "events": [{"n": 1, "fields": {"wallet": "w2", "amount": "700"}}],
                             "stream": [1, {"event": 1, "phase": 2}], "kills": []})";
  std::string file = writeFile("retry.json", schedule);
  Result fails = clean({"replay", file, "--target", target("simple")});
  INFO(fails.out << fails.err);
  CHECK(fails.status == 1);
  CHECK(fails.report["verdict"] == "fail");
  CHECK(kindsOf(fails.report).count("duplicate") == 1);
  Result passes = clean({"replay", file, "--target", target("dedup-table"), "--replays", "2"});
  INFO(passes.out << passes.err);
  CHECK(passes.status == 0);
  CHECK(passes.report["replay"]["verdicts"] == nlohmann::json::array({"pass", "pass"}));

  std::string bad = writeFile("bad.json", R"({"version": 2, "scenario": "wallet", "events": [], "stream": [1]})");
  Result r = clean({"replay", bad, "--target", target("simple")});
  CHECK(r.status == 2);
  CHECK(r.err.find("bad.json") != std::string::npos);
  CHECK(r.err.find("events") != std::string::npos);
  std::string unversioned = writeFile("unversioned.json", R"({"scenario": "wallet", "events": [{"n": 1}], "stream": [1]})");
  r = clean({"replay", unversioned, "--target", target("simple")});
  CHECK(r.status == 2);
  CHECK(r.err.find("unversioned.json: field 'version'") != std::string::npos);
  std::string noTarget = writeFile("none.json", schedule);
  r = clean({"replay", noTarget});
  CHECK(r.status == 2);
  CHECK(r.err.find("--target") != std::string::npos);
}

TEST_CASE("check: a nondeterministic target is flaky (exit 2), never a clean failure or a pass", "[check]") {
  // Each process ignores its dedup with probability 1/4. One consumer at a time (a kill's replacement is one
  // more process: a run of two fails with probability 7/16 at most) and nine replays: the counterexample's
  // ten runs all fail with probability under 1/3000. (With two consumers and holds, runs of three or four
  // processes failed seven replays of seven in CI.)
  Result r = clean({"check", "--target", testTarget("flaky"), "--scenario", "wallet", "--seed", "2", "--consumers", "1-1",
                    "--replays", "9"});
  INFO(r.out << r.err);
  CHECK(r.status == 2);
  CHECK(r.report["verdict"] == "flaky");
  std::set<std::string> seen;
  for (const auto& v : counterexample(r)["verdicts"]) seen.insert(v.get<std::string>());
  CHECK(seen.count("fail") == 1);
  CHECK(seen.count("pass") == 1);
  CHECK(r.out.find("nondeterministic") != std::string::npos);
  // The violation seen is kept with its history: a failing replay of it, or the search's run that failed.
  bool kept = false;
  for (const auto& run : r.report["runs"]) kept = kept || (!run["violations"].empty() && run.contains("history"));
  CHECK(kept);
}

TEST_CASE("check: a failure whose replays disagree is shrunk to a schedule that fails every time", "[check]") {
  // flaky-first-sure credits copies in every other run, and always when its stream holds one entry: the
  // first failure (five events, a kill before the first XACK) fails in every other run, its one-event
  // shrink in every run.
  Result r = clean({"check", "--target", testTarget("flaky-first-sure"), "--scenario", "wallet", "--seed", "1",
                    "--workers", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  CHECK(r.report["verdict"] == "fail");
  const auto& cx = counterexample(r);
  std::set<std::string> found;
  for (const auto& v : cx["found"]["verdicts"]) found.insert(v.get<std::string>());
  CHECK(found == std::set<std::string>{"fail", "pass"});
  for (const auto& v : cx["verdicts"]) CHECK(v == "fail");
  CHECK(cx["schedule"]["events"].size() == 1);
  CHECK(cx["flaky"] == false);
  CHECK(r.out.find("the schedule the search found failed in 2 of its 4 runs") != std::string::npos);
}

TEST_CASE("check: versioned-naive ends at a stale version, shrunk to two versions of one customer", "[check]") {
  Result r = clean({"check", "--target", target("versioned-naive"), "--scenario", "customer-city", "--seed", "1",
                    "--max-events", "4"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  CHECK(kindsOf(r.report).count("stale-version") == 1);
  const auto& events = counterexample(r)["schedule"]["events"];
  CHECK(events.size() <= 2);
  std::set<std::string> customers;
  for (const auto& e : events) customers.insert(e["fields"]["customer"].get<std::string>());
  CHECK(customers.size() == 1);
}

TEST_CASE("check: ship-naive ships an order twice", "[check]") {
  Result r = clean({"check", "--target", target("ship-naive"), "--scenario", "order-shipping", "--seed", "1",
                    "--max-events", "4"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  CHECK(kindsOf(r.report).count("duplicate") == 1);
}

TEST_CASE("check: versioned-guard and ship-guarded pass 20 schedules each", "[check]") {
  for (auto [t, sc] : {std::pair{"versioned-guard", "customer-city"}, std::pair{"ship-guarded", "order-shipping"}}) {
    Result r = clean({"check", "--target", target(t), "--scenario", sc, "--runs", "20", "--seed", "11",
                      "--max-events", "4"});
    INFO(t << ": " << r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.report["check"]["passed"] == 20);
    CHECK(r.report["check"]["coverage_summary"]["fired"].get<int>() > 8);
  }
}

TEST_CASE("check: a consumer that ignores the URL's Valkey database (host and port only) passes on every worker",
          "[check]") {
  // Three workers create their workspaces at once, each but the first with a Valkey of its own, all in
  // database 0: py-host-port never sends SELECT. When the workers shared one server in databases 0, 1, 2,
  // its runs on the second and third worker found no stream (NOGROUP) and check called it flaky.
  Result r = clean({"check", "--target", testTarget("py-host-port"), "--workers", "3", "--seed", "1", "--runs",
                    "12", "--faults", "kill"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.report["verdict"] == "pass");
  CHECK(r.report["check"]["runs"] == 12);
}
