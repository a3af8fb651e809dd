/// idemproof merge: the shards checked to be one run (same command, target, scenario, seed, N and flags;
/// every index once), then joined by their command's merge (merge_check.cc, merge_matrix.cc).
#include "report/merge.h"

#include "core/error.h"
#include "core/verdict.h"
#include "report/merge_detail.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace idem {

using namespace merge_detail;

namespace {

/// What a field that must be equal in every shard holds in one (absent = null).
using FieldOf = std::function<json(const json& report, const ShardSection& shard)>;

FieldOf in(const char* pointer) {
  return [p = json::json_pointer(pointer)](const json& r, const ShardSection&) { return r.contains(p) ? r.at(p) : json(nullptr); };
}

/// The fields that must be equal in every shard, with the name a reason gives them.
const std::vector<std::pair<FieldOf, const char*>>& sameFields() {
  static const std::vector<std::pair<FieldOf, const char*>> f = {
      {in("/command"), "command"},
      {in("/targets"), "target"},
      {in("/scenario"), "scenario"},
      {in("/seed"), "seed"},
      {[](const json&, const ShardSection& s) { return json(s.count); }, "number of shards N"},
      {[](const json&, const ShardSection& s) { return json(s.items); }, "--runs"},
      {in("/check/max_events"), "--max-events"},
      {in("/check/consumers"), "--consumers"},
      {in("/check/faults"), "--faults"},
      {in("/check/replays"), "--replays"},
      {in("/sweep/fault_kinds"), "--faults"},
      {in("/sweep/events"), "--events"},
      {in("/sweep/reduce_above"), "--exhaustive or --reduce-above"},
      {in("/sweep/selected_points"), "reduced selection (the fault-free traces differ)"},
      {in("/sweep/faults_digest"),
       "faults planned (their fault-free runs took different steps: give every shard one trace with --trace-from)"},
      {in("/compare/classes"), "classes (the targets' fault-free traces differ)"},
      {in("/compare/runs_per_class"), "--runs"},
      {in("/compare/per_class"), "--per-class"},
      {in("/compare/events"), "--events"},
      {[](const json&, const ShardSection& s) { return s.failOnViolation ? json(*s.failOnViolation) : json(nullptr); },
       "--fail-on-violation"},
      {[](const json&, const ShardSection& s) { return json(s.command); }, "command"},
      {in("/servers/embedded"), "servers (embedded or --database-url)"},
  };
  return f;
}

/// The shard section of a report checkShardShape passed; a member it does not know of refused in one line.
ShardSection shardSectionOf(const ShardReport& s) {
  try {
    return s.report.at("shard").get<ShardSection>();
  } catch (const json::exception& e) {
    throw UsageError(fmt::format("merge: {}: field '/shard': {}", s.dir, e.what()));
  } catch (const std::invalid_argument& e) { // a verdict that is none
    throw UsageError(fmt::format("merge: {}: field '/shard': {}", s.dir, e.what()));
  }
}

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
  std::vector<ShardSection> sections;
  for (const auto& s : shards) sections.push_back(shardSectionOf(s));
  const json& first = shards.front().report;
  for (size_t k = 0; k < shards.size(); ++k)
    for (const auto& [field, name] : sameFields()) {
      const json mine = field(shards[k].report, sections[k]), theirs = field(first, sections.front());
      if (mine != theirs)
        throw fail(fmt::format("{} and {} differ in {} ({} against {}): not shards of one run", shards.front().dir,
                               shards[k].dir, name, theirs.dump(), mine.dump()));
    }
  const int n = sections.front().count;
  ByIndex byIndex;
  for (size_t k = 0; k < shards.size(); ++k) {
    const ShardReport& s = shards[k];
    const int i = sections[k].index;
    if (!byIndex.emplace(i, ShardInput{&s, sections[k]}).second)
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
