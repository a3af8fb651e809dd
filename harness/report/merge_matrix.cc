/// The merges of sweep and compare shards: each fault point (sweep) or cell (compare) comes from the
/// shard that ran it, and the verdicts are recomputed from them as the unsharded command computes them.
/// Every shard ran the fault-free baselines; the merged report keeps shard 0's.
#include "core/error.h"
#include "core/verdict.h"
#include "report/merge_detail.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace idem::merge_detail {

json mergeSweep(const ByIndex& byIndex, int n) {
  const json& first = byIndex.at(0)->report;
  for (const auto& [i, s] : byIndex)
    if (s->report.at("/shard/baseline"_json_pointer) != first.at("/shard/baseline"_json_pointer))
      throw UsageError(fmt::format("merge: the fault-free baseline of shard {} is {} and of shard 0 {}: their points "
                                   "may differ, so they cannot be one sweep", i, s->report["shard"]["baseline"].dump(),
                                   first["shard"]["baseline"].dump()));
  std::vector<json> points;
  json runs = json::array(), violations = json::array(), shards = json::array();
  bool error = false;
  for (const auto& [i, s] : byIndex) {
    const json& r = s->report;
    for (const auto& p : r["sweep"]["points"]) points.push_back(p);
    for (const auto& run : r.value("runs", json::array()))
      if (i == 0 || run.value("id", "") != "baseline") runs.push_back(relocate(run, i, true));
    for (const auto& v : r.value("violations", json::array()))
      if (i == 0 || v.value("run", "") != "baseline") violations.push_back(v);
    error = error || r.value("verdict", "") == "error";
    shards.push_back(shardEntry(i, *s, static_cast<int>(r["sweep"]["points"].size())));
  }
  std::sort(points.begin(), points.end(), [](const json& a, const json& b) { return a.at("index") < b.at("index"); });
  // The unsharded sweep's counts and verdict (driver/sweep.cc).
  const std::string baseline = first["shard"]["baseline"];
  int fails = baseline == "fail" ? 1 : 0, unknown = 0, notFired = 0;
  for (const auto& p : points) {
    std::string v = p.at("verdict");
    fails += v == "fail";
    unknown += v != "fail" && v != "pass";
    notFired += !p.at("fired").get<bool>();
  }
  const bool traceUsable = baseline == "pass" || baseline == "fail";
  const bool noFaults = points.empty() && !first["sweep"].value("no_faults", json()).is_null(); // ran none at all
  Verdict verdict = fails ? Verdict::Fail
                          : (unknown || notFired || !traceUsable || noFaults) ? Verdict::Unknown : Verdict::Pass;
  if (error) verdict = Verdict::Error;

  json merged = first;
  merged["verdict"] = toString(verdict);
  merged["runs"] = runs;
  merged["violations"] = violations;
  if (merged.contains("processes")) merged["processes"] = relocateProcesses(merged["processes"], 0);
  merged["sweep"].update({{"points", points}, {"failed", fails}, {"unknown", unknown}, {"not_fired", notFired}});
  merged["merge"] = {{"shards", shards}, {"count", n}, {"picked", nullptr}, {"runs_up_to", nullptr}};
  sumShards(byIndex, n, static_cast<int64_t>(points.size() + 1), merged);
  return merged;
}

json mergeCompare(const ByIndex& byIndex, int n) {
  const json& first = byIndex.at(0)->report;
  // Cell k comes from shard k % N (driver/compare.h, Options::shard).
  const size_t count = first["compare"]["cells"].size();
  json cells = json::array();
  std::set<std::string> examples;
  for (size_t k = 0; k < count; ++k) {
    const json& c = byIndex.at(static_cast<int>(k % static_cast<size_t>(n)))->report["compare"]["cells"].at(k);
    cells.push_back(c);
    if (!c.value("example", std::string()).empty()) examples.insert(c["example"].get<std::string>());
  }
  // Each target's verdict from its cells, as matrixOf computes it (driver/compare.cc).
  json targets = first["compare"]["targets"];
  bool anyFail = false, unknownCells = false;
  for (auto& t : targets) {
    std::set<std::string> kinds;
    std::string verdict = "pass", example;
    int unknown = 0;
    for (const auto& c : cells) {
      if (c["target"] != t["name"]) continue;
      for (const auto& k : c["kinds"]) kinds.insert(k.get<std::string>());
      if (c.value("unknown", 0) > 0) ++unknown;
      std::string v = c["verdict"];
      if (v == "fail" && example.empty()) example = c.value("example", "");
      if (v == "fail") verdict = "fail";
      else if (v == "unknown" && verdict == "pass") verdict = "unknown";
    }
    t.update({{"kinds", kinds}, {"verdict", verdict}, {"example", example}, {"unknown_cells", unknown}});
    anyFail = anyFail || verdict == "fail";
    unknownCells = unknownCells || unknown > 0;
  }
  // The runs the cells show (a baseline example from the first shard that holds it), their violations.
  json runs = json::array(), violations = json::array(), shards = json::array();
  std::set<std::string> kept;
  int64_t schedules = 0;
  for (const auto& [i, s] : byIndex) {
    const json& r = s->report;
    for (const auto& run : r.value("runs", json::array())) {
      std::string id = run.value("id", "");
      if (examples.count(id) && kept.insert(id).second) runs.push_back(relocate(run, i, true));
    }
    int64_t ran = r.value("timings", json::object()).value("schedules", int64_t(0));
    schedules += ran;
    shards.push_back(shardEntry(i, *s, static_cast<int>(ran)));
  }
  for (const auto& [i, s] : byIndex)
    for (const auto& v : s->report.value("violations", json::array()))
      if (kept.count(v.value("run", "")) && std::find(violations.begin(), violations.end(), v) == violations.end())
        violations.push_back(v);

  json merged = first;
  merged["verdict"] = toString(anyFail ? Verdict::Fail : unknownCells ? Verdict::Unknown : Verdict::Pass);
  merged["compare"]["cells"] = cells;
  merged["compare"]["targets"] = targets;
  merged["runs"] = runs;
  merged["violations"] = violations;
  merged.erase("processes");
  merged["merge"] = {{"shards", shards}, {"count", n}, {"picked", nullptr}, {"runs_up_to", nullptr},
                     {"fail_on_violation", first["shard"].value("fail_on_violation", false)},
                     {"unknown_cells", unknownCells}};
  sumShards(byIndex, n, schedules, merged);
  return merged;
}

} // namespace idem::merge_detail
