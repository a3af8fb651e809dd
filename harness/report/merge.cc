/// idemproof merge: the shards checked to be one run (same command, target, scenario, seed, N and flags;
/// every index once), then joined by their command's merge (merge_check.cc, merge_matrix.cc).
#include "report/merge.h"

#include "core/error.h"
#include "core/verdict.h"
#include "report/merge_detail.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace idem {

using namespace merge_detail;

namespace {

/// The fields that must be equal in every shard, with the name a reason gives them (absent = null).
const std::vector<std::pair<json::json_pointer, const char*>>& sameFields() {
  static const std::vector<std::pair<json::json_pointer, const char*>> f = {
      {json::json_pointer("/command"), "command"},
      {json::json_pointer("/targets"), "target"},
      {json::json_pointer("/scenario"), "scenario"},
      {json::json_pointer("/seed"), "seed"},
      {json::json_pointer("/shard/count"), "number of shards N"},
      {json::json_pointer("/shard/items"), "--runs"},
      {json::json_pointer("/check/max_events"), "--max-events"},
      {json::json_pointer("/check/consumers"), "--consumers"},
      {json::json_pointer("/check/faults"), "--faults"},
      {json::json_pointer("/check/replays"), "--replays"},
      {json::json_pointer("/sweep/fault_kinds"), "--faults"},
      {json::json_pointer("/sweep/events"), "--events"},
      {json::json_pointer("/sweep/reduce_above"), "--exhaustive or --reduce-above"},
      {json::json_pointer("/sweep/selected_points"), "reduced selection (the fault-free traces differ)"},
      {json::json_pointer("/compare/classes"), "classes (the targets' fault-free traces differ)"},
      {json::json_pointer("/compare/runs_per_class"), "--runs"},
      {json::json_pointer("/compare/per_class"), "--per-class"},
      {json::json_pointer("/compare/events"), "--events"},
      {json::json_pointer("/shard/fail_on_violation"), "--fail-on-violation"},
      {json::json_pointer("/shard/command"), "command"},
      {json::json_pointer("/servers/embedded"), "servers (embedded or --database-url)"},
  };
  return f;
}

json at(const json& j, const json::json_pointer& p) { return j.contains(p) ? j.at(p) : json(nullptr); }

} // namespace

namespace merge_detail {

json relocate(json run, int index, bool keepId) {
  if (!keepId) run["id"] = shardFolder(index) + run.value("id", std::string("run"));
  if (run.contains("processes")) run["processes"] = relocateProcesses(run["processes"], index);
  return run;
}

json relocateProcesses(json processes, int index) {
  for (auto& p : processes)
    if (p.contains("log") && p["log"].is_string()) p["log"] = shardFolder(index) + p["log"].get<std::string>();
  return processes;
}

void sumShards(const ByIndex& byIndex, int n, int64_t schedules, json& merged) {
  int workers = 0;
  int64_t totalMs = 0, slowestMs = 0;
  for (const auto& [i, s] : byIndex) {
    workers += s->report["options"].value("workers", 0);
    int64_t ms = s->report.value("timings", json::object()).value("total_ms", int64_t(0));
    totalMs += ms;
    slowestMs = std::max(slowestMs, ms);
  }
  merged["options"]["workers"] = std::max(1, workers);
  merged["timings"] = {{"total_ms", totalMs}, {"schedules", schedules}, {"slowest_shard_ms", slowestMs}, {"shards", n}};
}

json shardEntry(int index, const ShardReport& s, int runs) {
  return {{"index", index}, {"dir", s.dir}, {"verdict", s.report.value("verdict", "unknown")}, {"runs", runs},
          {"folder", shardFolder(index)}, {"counterexample", nullptr}};
}

} // namespace merge_detail

std::string shardFolder(int index) { return fmt::format("shard-{}/", index); }

json mergeReports(const std::vector<ShardReport>& shards) {
  if (shards.empty()) throw UsageError("merge: no shard reports given");
  auto fail = [](const std::string& why) { return UsageError("merge: " + why); };
  for (const auto& s : shards) {
    if (!s.report.is_object() || !s.report.contains("shard"))
      throw fail(fmt::format("{} is not the report of a shard (run check, sweep or compare with --shard I/N)", s.dir));
    std::string command = s.report.value("command", "?");
    if (command != "check" && command != "sweep" && command != "compare")
      throw fail(fmt::format("{}: shards of {} cannot be merged (check, sweep and compare can)", s.dir, command));
    checkShardShape(s.report, "merge: " + s.dir);
  }
  const json& first = shards.front().report;
  for (const auto& s : shards)
    for (const auto& [ptr, name] : sameFields())
      if (at(s.report, ptr) != at(first, ptr))
        throw fail(fmt::format("{} and {} differ in {} ({} against {}): not shards of one run", shards.front().dir,
                               s.dir, name, at(first, ptr).dump(), at(s.report, ptr).dump()));
  const int n = first.at("/shard/count"_json_pointer).get<int>();
  ByIndex byIndex;
  for (const auto& s : shards) {
    int i = s.report.at("/shard/index"_json_pointer).get<int>();
    if (!byIndex.emplace(i, &s).second)
      throw fail(fmt::format("shard {}/{} is given twice ({} and {})", i, n, byIndex[i]->dir, s.dir));
  }
  for (int i = 0; i < n; ++i)
    if (!byIndex.count(i)) throw fail(fmt::format("shard {}/{} is missing ({} of {} shards given)", i, n, shards.size(), n));
  const std::string command = first.value("command", "");
  if (command == "compare")
    for (const auto& [i, s] : byIndex)
      if (s->report["compare"]["cells"].size() != first["compare"]["cells"].size())
        throw fail(fmt::format("{} and {} hold {} and {} cells: not shards of one compare", shards.front().dir, s->dir,
                               first["compare"]["cells"].size(), s->report["compare"]["cells"].size()));
  json merged;
  try {
    merged = command == "sweep" ? mergeSweep(byIndex, n) : command == "compare" ? mergeCompare(byIndex, n) : mergeCheck(byIndex, n);
  } catch (const json::exception& e) { // a field checkShardShape does not know about: still one line, exit 2
    throw fail(fmt::format("the shards' reports are not ones idemproof wrote: {}", e.what()));
  } catch (const std::invalid_argument& e) { // a verdict that is none
    throw fail(fmt::format("the shards' reports are not ones idemproof wrote: {}", e.what()));
  }
  merged.erase("shard");
  return merged;
}

int mergedExitStatus(const json& merged) {
  if (merged.value("command", "") == "compare") {
    const json& m = merged["merge"];
    if (m.value("unknown_cells", false)) return 2;
    return m.value("fail_on_violation", false) && merged.value("verdict", "") == "fail" ? 1 : 0;
  }
  return exitStatus(verdictFromString(merged.value("verdict", "unknown")));
}

} // namespace idem
