/// Shards end to end: `check --shard I/N` run as N separate processes and joined by `idemproof merge`
/// gives the unsharded check's verdict, run counts, fault coverage and counterexample (search/shard.h,
/// report/merge.h); a sharded sweep and compare give the unsharded points and matrix; a merge of shards
/// that do not belong together exits 2 with one line naming why. Cheap settings (few short schedules, a
/// matrix of kill and race classes) keep each case within seconds: each case runs its command once
/// unsharded and once split into 3 shards (a first, a middle and a last shard; how N shards partition the
/// schedules for any N is the unit tests' of search/shard.h), and every assertion reads those runs.
#include "support.h"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

using namespace itest;

namespace {

/// The check flags both the unsharded run and its shards take.
std::vector<std::string> checkArgs(const std::string& t, const std::string& seed, const std::string& runs) {
  return {"check", "--target", target(t), "--scenario", "wallet", "--seed", seed, "--runs", runs, "--max-events", "3",
          "--consumers", "1", "--faults", "kill,drop"};
}

struct Sharded {
  std::vector<Result> shards;
  Result merged;
};

Sharded shardAndMerge(std::vector<std::string> args, int n) {
  Sharded s;
  std::vector<std::string> merge{"merge"};
  for (int i = 0; i < n; ++i) {
    auto a = args;
    a.push_back("--shard");
    a.push_back(fmt::format("{}/{}", i, n));
    s.shards.push_back(clean(a));
    INFO(s.shards.back().out << s.shards.back().err);
    CHECK(s.shards.back().report["shard"]["index"] == i);
    merge.push_back(s.shards.back().reportDir.string());
  }
  s.merged = clean(merge);
  return s;
}

/// Whether a fault of the check's runs never fired. Which steps a consumer makes can depend on timing (a
/// blocking read that returns empty once more): a planned fault then does not fire, in any two runs of one
/// seed, sharded or not. Such a run is coverage loss (and may make the check unknown); where neither run
/// had any, fired faults and verdicts must be equal.
bool coverageLoss(const Result& r) {
  if (r.report.contains("compare"))
    for (const auto& c : r.report["compare"]["cells"]) {
      if (c.value("faults_fired", 0) != c.value("faults_planned", 0)) return true;
      // A race whose copy did not reach c2 while c1 was held (timing: c2 claimed after the hold ended).
      if (c.value("class", "").rfind("race:", 0) == 0 && c.value("verdict", "") == "n/a") return true;
    }
  return r.report.contains("check") && r.report["check"]["coverage_summary"]["runs_with_coverage_loss"] != 0;
}

std::string firstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

using nlohmann::json;

/// What is left of a report to compare a merged one with the unsharded one field by field. Taken out,
/// each for its reason:
/// - timings: wall-clock durations (a merged report adds the shards' count and the slowest shard's);
/// - merge: the merged report's own section (which shard folders it read);
/// - options.workers: a merged report sums the shards' workers;
/// - of each run, its history, stats, messages and log paths: every execution has its own stream entry
///   ids, event ids, process ids, passwords and times; what the run is stays (id, target, verdict, error,
///   schedule, each checker's verdict, the kinds of its violations, its processes' names, whether the
///   history is shown);
/// - runs whose id starts with shard-I/ and their violations: a merged check keeps every shard's own
///   counterexample under its shard's folder (docs/report.md), which the unsharded check never ran;
/// - processes and violations at the top: names, runs and kinds stay (log paths lie under shard-I/ in a
///   merged report; messages name the execution's stream entries);
/// - sweep.points[].detail: the step's bytes, with the execution's stream entry ids;
/// - check.counterexample file and replay command: paths under the shard's folder;
/// - compare.costs wall_us, msgs_per_s, steps and round_trips_per_msg: measured on each execution's
///   fault-free run (its steps count the polls its timing allowed: one more empty read is one more step).
json comparable(json r) {
  auto shardRun = [](const std::string& id) { return id.rfind("shard-", 0) == 0; };
  r.erase("timings");
  r.erase("merge");
  if (r.contains("options")) r["options"].erase("workers");
  json runs = json::array();
  for (const auto& x : r.value("runs", json::array())) {
    const std::string id = x.value("id", "");
    if (shardRun(id)) continue;
    json checks = json::array(), kinds = json::array(), names = json::array();
    for (const auto& c : x.value("checks", json::array())) checks.push_back({c.value("checker", ""), c.value("verdict", "")});
    for (const auto& v : x.value("violations", json::array())) kinds.push_back(v.value("kind", ""));
    for (const auto& p : x.value("processes", json::array())) names.push_back(p.value("name", ""));
    runs.push_back({{"id", id}, {"target", x.value("target", "")}, {"verdict", x.value("verdict", "")},
                    {"error", x.value("error", "")}, {"schedule", x.value("schedule", json())}, {"checks", checks},
                    {"violation_kinds", kinds}, {"processes", names}, {"history", x.contains("history")}});
  }
  r["runs"] = runs;
  json violations = json::array(), processes = json::array();
  for (const auto& v : r.value("violations", json::array()))
    if (!shardRun(v.value("run", ""))) violations.push_back({v.value("run", ""), v.value("kind", "")});
  for (const auto& p : r.value("processes", json::array())) processes.push_back(p.value("name", ""));
  r["violations"] = violations;
  if (r.contains("processes")) r["processes"] = processes;
  // A point's or a cell's replay names its schedule's copy in its own report folder: compare the file names.
  auto ownFolderOut = [](json& x) {
    if (!x.contains("replay")) return;
    const std::string replay = x["replay"];
    const auto at = replay.find("/schedules/");
    x["replay"] = at == std::string::npos ? replay : replay.substr(at);
  };
  if (r.contains("sweep"))
    for (auto& p : r["sweep"]["points"]) {
      p.erase("detail");
      ownFolderOut(p);
    }
  if (r.contains("compare"))
    for (auto& c : r["compare"]["cells"]) ownFolderOut(c);
  if (r.contains("check") && r["check"]["counterexample"].is_object())
    for (const char* k : {"file", "replay_command"}) r["check"]["counterexample"].erase(k);
  if (r.contains("compare"))
    for (auto& c : r["compare"]["costs"])
      for (const char* k : {"wall_us", "msgs_per_s", "steps", "round_trips_per_msg"}) c.erase(k);
  return r;
}

/// Which fault of a run fires can depend on timing (a blocking read that returns empty once more): a check
/// or a compare that lost a fault in one execution and not in another differs in what fired, and so in its
/// coverage, notes and perhaps its verdict. Those members then leave the comparison too (with a warning).
void dropFiredCounts(json& r) {
  if (r.contains("compare")) { // a cell whose fault never fired counts it unknown, and its target with it
    for (auto& c : r["compare"]["cells"])
      for (const char* k : {"faults_fired", "unknown", "verdict"}) c.erase(k);
    for (auto& t : r["compare"]["targets"])
      for (const char* k : {"verdict", "unknown_cells"}) t.erase(k);
    r.erase("verdict");
  }
  if (!r.contains("check")) return;
  json& c = r["check"];
  for (const char* k : {"coverage", "coverage_by_kind", "notes"}) c.erase(k);
  for (const char* k : {"fired", "runs_with_coverage_loss", "never_fired", "coverage_loss_examples"})
    c["coverage_summary"].erase(k);
  for (auto& s : c["run_summaries"]) s.erase("fired");
  r.erase("verdict");
}

/// How many shards the tests split a command into: a first, a middle and a last one.
constexpr int kShards = 3;

/// The unsharded run of a command and its split into kShards shards, merged.
struct Splits {
  Result whole;
  Sharded split;
};

/// Runs `args` unsharded, then as kShards shards merged, and requires the merged report to equal the
/// unsharded one but for what `comparable` takes out; the exit status too. Returns the runs, for what a
/// test asserts of the shards themselves.
Splits requireMergedEqualsWhole(const std::vector<std::string>& args) {
  Splits out;
  out.whole = clean(args);
  const Result& whole = out.whole;
  INFO(whole.out << whole.err);
  REQUIRE(whole.report.is_object());
  out.split = shardAndMerge(args, kShards);
  const Sharded& s = out.split;
  INFO(kShards << " shards: " << s.merged.out << s.merged.err);
  REQUIRE(s.merged.report.is_object());
  json a = comparable(whole.report), b = comparable(s.merged.report);
  if (coverageLoss(whole) || coverageLoss(s.merged)) {
    WARN("a planned fault never fired (timing): what fired is not compared");
    dropFiredCounts(a);
    dropFiredCounts(b);
  } else {
    CHECK(s.merged.status == whole.status);
  }
  const json patch = json::diff(a, b);
  INFO("what the merged report changes of the unsharded one: " << patch.dump(1));
  CHECK(patch.empty());
  return out;
}

} // namespace

TEST_CASE("a passing check merged from 3 shards is the unsharded check field by field, and a merge of "
          "shards that do not belong together exits 2 naming why", "[shard]") {
  const auto args = checkArgs("dedup-table", "7", "9");
  auto runs = requireMergedEqualsWhole(args);
  const Result& whole = runs.whole;
  REQUIRE((whole.status == 0 || coverageLoss(whole)));
  const Sharded& s = runs.split;
  CHECK(s.merged.report["merge"]["shards"].size() == 3);
  CHECK(std::filesystem::exists(s.merged.reportDir / "report.html"));
  int total = 0;
  for (const auto& r : s.shards) total += r.report["check"]["runs"].get<int>();
  CHECK(total == 9);

  auto dirs = [&](std::vector<int> which) {
    std::vector<std::string> a{"merge"};
    for (int i : which) a.push_back(s.shards[static_cast<size_t>(i)].reportDir.string());
    return a;
  };
  Result missing = clean(dirs({0, 2}));
  CHECK(missing.status == 2);
  CHECK(firstLine(missing.err).find("shard 1/3 is missing") != std::string::npos);
  CHECK(missing.err.find('\n') == missing.err.size() - 1); // one line
  Result twice = clean(dirs({0, 1, 2, 1}));
  CHECK(twice.status == 2);
  CHECK(twice.err.find("given twice") != std::string::npos);
  // A shard of another run: shard 2's report with another seed (what a mixed-up artifact folder holds).
  auto foreign = s.shards[2].reportDir.parent_path() / "foreign";
  std::filesystem::create_directories(foreign);
  auto report = s.shards[2].report;
  report["seed"] = 8;
  std::ofstream(foreign / "report.json") << report.dump();
  auto mixed = dirs({0, 1});
  mixed.push_back(foreign.string());
  Result differ = clean(mixed);
  CHECK(differ.status == 2);
  CHECK(differ.err.find("differ in seed") != std::string::npos);
  Result notShard = clean({"merge", whole.reportDir.string()});
  CHECK(notShard.status == 2);
  CHECK(notShard.err.find("is not the report of a shard") != std::string::npos);
}

TEST_CASE("a failing check merged from 3 shards is the unsharded check field by field, its notes too, "
          "each shard stopping at its first failure, the merge keeping the lowest as the unsharded check shrank it and "
          "every shard's counterexample", "[shard]") {
  auto args = checkArgs("retry-no-dedup", "3", "12");
  args.insert(args.end(), {"--replays", "1"});
  auto runs = requireMergedEqualsWhole(args);
  REQUIRE(runs.whole.status == 1);
  const Sharded& s = runs.split;
  INFO(s.merged.out);
  int failing = 0;
  for (const auto& sh : s.merged.report["merge"]["shards"]) failing += !sh["counterexample"].is_null();
  CHECK(failing >= 1);
  CHECK(s.merged.out.find("replay: idemproof replay") != std::string::npos);
}

TEST_CASE("sweep merged from 3 shards is the unsharded sweep field by field, every fault point with its "
          "verdict", "[shard]") {
  auto runs = requireMergedEqualsWhole({"sweep", "--target", target("simple"), "--scenario", "wallet", "--faults", "forget"});
  REQUIRE(runs.whole.status == 1);
  REQUIRE(!runs.whole.report["sweep"]["points"].empty());
}

TEST_CASE("compare merged from 3 shards is the unsharded compare field by field, every cell of the "
          "matrix, and a shard alone leaves the others' cells n/a", "[shard]") {
  // The kill and race classes of two targets, one failing and one passing (--runs 0: no generated classes,
  // whose cells merge as any other).
  auto runs = requireMergedEqualsWhole({"compare", "--target", target("dedup-table"), "--target", target("simple"),
                                        "--scenario", "wallet", "--per-class", "1", "--runs", "0", "--faults", "kill",
                                        "--fail-on-violation"});
  REQUIRE(runs.whole.status == 1);
  auto notApplicable = [](const Result& r) {
    int na = 0;
    for (const auto& c : r.report["compare"]["cells"]) na += c["verdict"] == "n/a";
    return na;
  };
  for (const auto& shard : runs.split.shards) CHECK(notApplicable(shard) > notApplicable(runs.whole));
}

TEST_CASE("sweep shards that take their trace from one fault-free run with --trace-from plan the faults the "
          "unsharded sweep on that run plans, and merge refuses shards that planned other faults", "[shard]") {
  const Result traced = clean({"run", "--target", target("dedup-table"), "--scenario", "wallet"});
  INFO(traced.out << traced.err);
  REQUIRE(traced.status == 0);
  const std::string from = traced.reportDir.string();
  auto runs = requireMergedEqualsWhole({"sweep", "--target", target("dedup-table"), "--scenario", "wallet", "--faults",
                                        "drop", "--trace-from", from});
  CHECK(runs.whole.status == 0);
  const json& whole = runs.whole.report["sweep"];
  CHECK(whole["trace_from"] == from);
  REQUIRE(whole["faults_digest"].is_string());
  CHECK(whole["faults_digest"] != "");
  CHECK(runs.whole.out.find("faults placed on the trace of " + from) != std::string::npos);
  for (const auto& shard : runs.split.shards) CHECK(shard.report["sweep"]["faults_digest"] == whole["faults_digest"]);

  // A shard that traced other steps plans other faults: its report says so, and merge names the field.
  const auto& last = runs.split.shards.back();
  const std::filesystem::path other = last.reportDir.parent_path() / (last.reportDir.filename().string() + "-other");
  std::filesystem::create_directories(other);
  json changed = last.report;
  changed["sweep"]["faults_digest"] = "0123456789abcdef";
  std::ofstream(other / "report.json") << changed.dump();
  const Result merged = idemproof({"merge", runs.split.shards[0].reportDir.string(), runs.split.shards[1].reportDir.string(),
                                   other.string()});
  INFO(merged.out << merged.err);
  CHECK(merged.status == 2);
  CHECK(merged.err.find("faults planned") != std::string::npos);
  CHECK(merged.err.find("--trace-from") != std::string::npos);
}

TEST_CASE("sweep --trace-from refuses, with exit 2 naming the flag and before any server starts, a report whose "
          "fault-free run had faults or ran another schedule, and a report of another command", "[shard]") {
  const Result killed = clean({"run", "--target", target("dedup-table"), "--scenario", "wallet", "--crash", "after:COMMIT#2"});
  REQUIRE(killed.report.is_object());
  const Result checked = clean({"check", "--target", target("dedup-table"), "--scenario", "wallet", "--runs", "1",
                                "--no-class-sweep", "--max-events", "2"});
  REQUIRE(checked.report.is_object());
  const Result traced = clean({"run", "--target", target("dedup-table"), "--scenario", "wallet"});
  REQUIRE(traced.status == 0);
  struct Case {
    std::vector<std::string> extra;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--trace-from", killed.reportDir.string()}, "its run had faults (after:COMMIT#2)"},
      {{"--trace-from", checked.reportDir.string()}, "a report of check"},
      {{"--trace-from", traced.reportDir.string(), "--events", "3"}, "is not this sweep's"},
      {{"--trace-from", traced.reportDir.string(), "--scenario-values"}, "other values"},
      {{"--trace-from", (traced.reportDir / "nothing-here").string()}, "no such file"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args{"sweep", "--target", target("dedup-table"), "--scenario", "wallet"};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const Result r = clean(args);
    INFO(r.out << r.err);
    CHECK(r.status == 2);
    CHECK(r.err.rfind("idemproof: --trace-from ", 0) == 0);
    CHECK(r.err.find(c.says) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.out.find("baseline") == std::string::npos); // no fault-free run started
  }
}
