// idemproof merge on made-up shard reports (report/merge.h): the runs kept are those up to the lowest
// failure of all shards, coverage and verdict counts are recomputed from them, the counterexample is the
// shard's that found that failure, and shards that are not one run are refused with one line.
#include "report/merge.h"

#include "core/error.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace idem;
using json = nlohmann::json;

namespace {

/// A run entry of a shard: run (1-based), verdict, and one planned kill that fired unless `lost`.
json runEntry(int run, const std::string& verdict, bool lost = false) {
  return {{"run", run}, {"verdict", verdict}, {"planned", {"after:COMMIT#1"}},
          {"fired", lost ? json::array() : json{"after:COMMIT#1"}}};
}

/// Shard i of n of an 8-run check; `failAt`: the run (1-based) at which this shard's search stopped failing.
ShardReport shard(int i, int n, std::optional<int> failAt = std::nullopt, uint64_t seed = 5) {
  json runs = json::array();
  for (int idx = i; idx < 8; idx += n) {
    bool fails = failAt && idx + 1 == *failAt;
    runs.push_back(runEntry(idx + 1, fails ? "fail" : "pass"));
    if (fails) break;
  }
  json cx = nullptr;
  if (failAt)
    cx = {{"found", {{"run", *failAt}}}, {"summary", "shrunk"}, {"file", "cx.json"}, {"flaky", false},
          {"replay_command", "idemproof replay cx.json"}};
  json r = {{"command", "check"}, {"verdict", failAt ? "fail" : "pass"}, {"targets", {"t"}}, {"target", "t"},
            {"scenario", "wallet"}, {"seed", seed}, {"servers", {{"embedded", true}}}, {"options", {{"workers", 2}}},
            {"runs", json::array()}, {"violations", json::array()}, {"timings", {{"total_ms", 100}, {"schedules", 3}}},
            {"shard", {{"index", i}, {"count", n}, {"command", "check"}, {"items", 8}, {"runs", runs}}},
            {"check", {{"runs", runs.size()}, {"max_events", 3}, {"consumers", {1, 2}}, {"faults", {"kill"}},
                       {"replays", 3}, {"kill_model", json::object()}, {"counterexample", cx}, {"flaky", 0},
                       {"coverage_summary", {{"coverage_loss_examples", json::array()}}}}}};
  return {"s" + std::to_string(i), r};
}

/// The one line `fn` refuses with ("" when it does not).
template <class F> std::string refusalOf(F&& fn) {
  try {
    fn();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

std::string refusal(const std::vector<ShardReport>& shards) {
  return refusalOf([&] { mergeReports(shards); });
}

} // namespace

TEST_CASE("merge of passing shards counts every run and its coverage") {
  json m = mergeReports({shard(0, 2), shard(1, 2)});
  CHECK(m["verdict"] == "pass");
  CHECK(m["check"]["runs"] == 8);
  CHECK(m["check"]["passed"] == 8);
  CHECK(m["check"]["coverage"]["COMMIT"] == json({{"planned", 8}, {"fired", 8}}));
  CHECK(m["check"]["coverage_by_kind"]["kill"]["COMMIT"]["fired"] == 8);
  CHECK(m["check"]["counterexample"].is_null());
  CHECK(!m.contains("shard"));
  CHECK(m["merge"]["shards"].size() == 2);
  CHECK(m["options"]["workers"] == 4);
  CHECK(mergedExitStatus(m) == 0);
}

TEST_CASE("merge keeps the runs up to the lowest failure of all shards and that shard's counterexample") {
  // Shard 0 (runs 1, 3, 5, 7) fails at 5; shard 1 (runs 2, 4, 6, 8) at 4: the unsharded search stops at 4.
  json m = mergeReports({shard(0, 2, 5), shard(1, 2, 4)});
  CHECK(m["verdict"] == "fail");
  CHECK(m["merge"]["picked"] == 1);
  CHECK(m["merge"]["runs_up_to"] == 4);
  CHECK(m["check"]["runs"] == 4);
  CHECK(m["check"]["passed"] == 3);
  CHECK(m["check"]["failed"] == 1);
  CHECK(m["check"]["coverage"]["COMMIT"]["planned"] == 4);
  CHECK(m["check"]["counterexample"]["found"]["run"] == 4);
  CHECK(m["check"]["counterexample"]["file"] == "shard-1/counterexample.json");
  CHECK(m["merge"]["shards"][0]["counterexample"]["run"] == 5); // every shard's kept
  // The merged run summaries are the shards' runs up to the cut, in run order.
  const json& summaries = m["check"]["run_summaries"];
  REQUIRE(summaries.size() == 4);
  for (int i = 0; i < 4; ++i) CHECK(summaries[static_cast<size_t>(i)]["run"] == i + 1);
  CHECK(summaries[3]["verdict"] == "fail");
  CHECK(mergedExitStatus(m) == 1);
}

namespace {

/// Shard i of 2 of a sweep of 4 kill points, all passing, whose fault-free run was `baseline`; a failing
/// baseline run names its shard in its one violation.
ShardReport sweepShard(int i, const std::string& baseline) {
  json points = json::array();
  for (int k = i; k < 4; k += 2)
    points.push_back({{"point", fmt::format("after:COMMIT#{}", k + 1)}, {"verdict", "pass"}, {"fired", true}, {"index", k}});
  json runs = {{{"id", "baseline"}, {"verdict", baseline}}};
  json violations = json::array();
  if (baseline == "fail") violations.push_back({{"run", "baseline"}, {"message", fmt::format("shard {}", i)}});
  json r = {{"command", "sweep"}, {"verdict", baseline == "fail" ? "fail" : "pass"}, {"targets", {"t"}}, {"target", "t"},
            {"scenario", "wallet"}, {"seed", uint64_t(5)}, {"servers", {{"embedded", true}}}, {"options", {{"workers", 1}}},
            {"runs", runs}, {"violations", violations}, {"timings", {{"total_ms", 100}, {"schedules", 3}}},
            {"shard", {{"index", i}, {"count", 2}, {"command", "sweep"}, {"items", 4}, {"baseline", baseline}}},
            {"sweep", {{"points", points}, {"fault_kinds", {"kill"}}, {"faults_digest", "d1"}}}};
  return {"s" + std::to_string(i), r};
}

} // namespace

TEST_CASE("merge of sweep shards whose fault-free runs differ, pass and fail, keeps the failing one") {
  // A consumer that races by itself may fail its fault-free run in one shard only; the faults planned are
  // the same (one digest), so the shards are one sweep, and it failed.
  for (int failing : {0, 1}) {
    json m = mergeReports({sweepShard(0, failing == 0 ? "fail" : "pass"), sweepShard(1, failing == 1 ? "fail" : "pass")});
    CHECK(m["verdict"] == "fail");
    CHECK(m["sweep"]["failed"] == 1);
    CHECK(m["sweep"]["points"].size() == 4);
    REQUIRE(m["runs"].size() == 1);
    CHECK(m["runs"][0]["id"] == "baseline");
    CHECK(m["runs"][0]["verdict"] == "fail");
    REQUIRE(m["violations"].size() == 1);
    CHECK(m["violations"][0]["message"] == fmt::format("shard {}", failing));
    CHECK(mergedExitStatus(m) == 1);
  }
  // A baseline without a usable trace planned nothing: not one sweep with a shard whose baseline ran.
  CHECK(refusal({sweepShard(0, "pass"), sweepShard(1, "unknown")}).find("cannot be one sweep") != std::string::npos);
  auto other = sweepShard(1, "fail");
  other.report["sweep"]["faults_digest"] = "d2";
  CHECK(refusal({sweepShard(0, "pass"), other}).find("faults planned") != std::string::npos);
}

TEST_CASE("merge refuses shards that are not one run, naming why in one line") {
  CHECK(refusal({shard(0, 3), shard(2, 3)}).find("shard 1/3 is missing") != std::string::npos);
  CHECK(refusal({shard(0, 2), shard(1, 2), shard(1, 2)}).find("shard 1/2 is given twice") != std::string::npos);
  CHECK(refusal({shard(0, 2), shard(1, 2, std::nullopt, 6)}).find("differ in seed") != std::string::npos);
  CHECK(refusal({shard(0, 2), shard(1, 3)}).find("differ in number of shards N") != std::string::npos);
  auto notShard = shard(0, 1);
  notShard.report.erase("shard");
  CHECK(refusal({notShard}).find("is not the report of a shard") != std::string::npos);
  auto other = shard(1, 2);
  other.report["targets"] = {"u"};
  CHECK(refusal({shard(0, 2), other}).find("differ in target") != std::string::npos);
  for (const auto& r : {refusal({shard(0, 3), shard(2, 3)}), refusal({shard(0, 2), shard(1, 2, std::nullopt, 6)})})
    CHECK(r.find('\n') == std::string::npos);
}

TEST_CASE("merge refuses a shard report of the wrong shape in one line naming the field, never an internal error") {
  auto indexText = shard(1, 2);
  indexText.report["shard"]["index"] = "1";
  CHECK(refusal({shard(0, 2), indexText}).find("field '/shard/index' must be a whole number from 0 to 9999, not \"1\"") !=
        std::string::npos);
  auto huge = shard(1, 2);
  huge.report["shard"]["index"] = uint64_t(1) << 40; // not "shard 0/2 given twice"
  CHECK(refusal({shard(0, 2), huge}).find("field '/shard/index' must be a whole number from 0 to 9999") != std::string::npos);
  auto beyond = shard(1, 2);
  beyond.report["shard"]["index"] = 2;
  CHECK(refusal({shard(0, 2), beyond}).find("field '/shard/index' is 2, not below the number of shards 2") != std::string::npos);
  auto runText = shard(1, 2);
  runText.report["shard"]["runs"][0]["run"] = "2";
  CHECK(refusal({shard(0, 2), runText}).find("field '/shard/runs/0/run' must be a whole number") != std::string::npos);
  auto planned = shard(1, 2);
  planned.report["shard"]["runs"][1]["planned"] = {7};
  CHECK(refusal({shard(0, 2), planned}).find("field '/shard/runs/1/planned/0' must be a string") != std::string::npos);
  auto workers = shard(0, 2);
  workers.report["options"]["workers"] = "two";
  CHECK(refusal({workers, shard(1, 2)}).find("field '/options/workers'") != std::string::npos);
  auto noRun = shard(0, 2, 5);
  noRun.report["check"]["counterexample"]["found"].erase("run");
  CHECK(refusal({noRun, shard(1, 2)}).find("field '/check/counterexample/found/run' is missing") != std::string::npos);
}

namespace {

/// A file of its own in a scratch folder, removed at scope end.
struct ScratchFile {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("merge-read-" + std::to_string(::getpid()));
  ScratchFile() { std::filesystem::create_directories(dir); }
  ~ScratchFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

std::string readRefusal(const std::string& dir) {
  return refusalOf([&] { readShard(dir); });
}

} // namespace

TEST_CASE("merge reads a shard report streaming: no second run list, no packed values, no link") {
  ScratchFile f;
  // A shard as check writes it: read back, the check's copy of the run list dropped (merge recomputes it).
  auto s = shard(0, 1);
  s.report["check"]["run_summaries"] = s.report["shard"]["runs"];
  std::ofstream(f.dir / "report.json") << s.report.dump(2);
  ShardReport read = readShard(f.dir.string());
  CHECK(read.report["shard"]["runs"] == s.report["shard"]["runs"]);
  CHECK_FALSE(read.report["check"].contains("run_summaries"));
  // 10 MB of one numeric array (2 bytes a value, 16 once parsed): refused as it is read.
  {
    std::ofstream out(f.dir / "report.json");
    out << R"({"command": "check", "junk": [)";
    for (int i = 0; i < 5000000; ++i) out << "1,";
    out << "1]}";
  }
  CHECK(readRefusal(f.dir.string()).find("values besides its run list that merge reads from one shard") !=
        std::string::npos);
  // A run entry that holds more than idemproof writes in one.
  {
    auto big = shard(0, 1);
    big.report["shard"]["runs"][0]["planned"] = std::vector<std::string>(300, "after:COMMIT#1");
    std::ofstream(f.dir / "report.json") << big.report.dump(2);
  }
  CHECK(readRefusal(f.dir.string()).find("an entry of field '/shard/runs' holds more than the 256 values") !=
        std::string::npos);
  // report.json as a link (to a file elsewhere, or a loop) is not a shard's.
  std::filesystem::remove(f.dir / "report.json");
  std::filesystem::create_symlink(f.dir / "report.json", f.dir / "report.json");
  CHECK(readRefusal(f.dir.string()).find("is a symbolic link") != std::string::npos);
}
