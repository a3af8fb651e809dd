/// The merges of sweep and compare shards: each fault point (sweep), row of holds (sweep --interleave) or
/// cell (compare) comes from the shard that ran it, and the verdicts are recomputed from them as the unsharded command computes them.
/// Every shard ran the fault-free baselines; the merged report keeps shard 0's, or the first that failed.
#include "core/error.h"
#include "core/verdict.h"
#include "report/check_verdict.h"
#include "report/compare_section.h"
#include "report/merge_detail.h"
#include "report/sweep_section.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

namespace idem::merge_detail {

namespace {

/// The merged report's runs (each with the shard that ran it) in their order, and their violations, each
/// from the shard that ran its run (every shard runs the baselines, with their own stream entries).
void setRuns(const ByIndex& byIndex, const std::vector<std::pair<json, int>>& runs, json& merged) {
  json list = json::array(), violations = json::array();
  for (const auto& [run, i] : runs) {
    list.push_back(run);
    for (const auto& v : byIndex.at(i)->report.value("violations", json::array()))
      if (v.value("run", "") == run.value("id", "")) violations.push_back(v);
  }
  merged["runs"] = std::move(list);
  merged["violations"] = std::move(violations);
}

/// The compare section of a shard, refused in one line naming the shard when it does not read.
CompareSection compareOf(const ShardInput& s) {
  try {
    return s->report.at("compare").get<CompareSection>();
  } catch (const json::exception& e) {
    throw UsageError(fmt::format("merge: {}: field '/compare': {}", s->dir, e.what()));
  } catch (const std::invalid_argument& e) { // a verdict that is none
    throw UsageError(fmt::format("merge: {}: field '/compare': {}", s->dir, e.what()));
  }
}

/// What every sweep shard gives alike: its runs (each with the shard that ran it; the baseline from the
/// shard `baselineOf` only), its entry in the merge section, whether it erred or was interrupted; and the
/// merged report.
struct SweepShards {
  int baselineOf = 0;
  std::vector<std::pair<json, int>> runs;
  json shards = json::array();
  bool error = false, interrupted = false;

  void add(int i, const ShardInput& s, int ran) {
    const json& r = s->report;
    for (const auto& run : r.value("runs", json::array()))
      if (i == baselineOf || run.value("id", "") != "baseline") runs.emplace_back(relocate(run, i, true), i);
    error = error || r.value("verdict", "") == "error";
    interrupted = interrupted || r.contains("interrupted");
    shards.push_back(shardEntry(i, *s, ran));
  }
  /// The runs in the unsharded order: `placeOf` a run's place (the baseline's 0).
  template <class Place>
  void order(Place placeOf) {
    std::stable_sort(runs.begin(), runs.end(), [&](const auto& a, const auto& b) { return placeOf(a.first) < placeOf(b.first); });
  }
  json merged(const ByIndex& byIndex, int n, const SweepSection& sweep, Verdict verdict, size_t schedules) const {
    json out = byIndex.at(0)->report;
    out["verdict"] = toString(verdict);
    setRuns(byIndex, runs, out);
    if (out.contains("processes")) out["processes"] = relocateProcesses(out["processes"], 0);
    out["sweep"] = sweep;
    out["merge"] = {{"shards", shards}, {"count", n}, {"picked", nullptr}, {"runs_up_to", nullptr}};
    sumShards(byIndex, n, static_cast<int64_t>(schedules), out);
    return out;
  }
};

/// The merge of an interleaving sweep's shards: each row of the grid, with its cells, from the shard that
/// ran it, in the unsharded grid's order; the counts and the verdict as driver/interleave.cc computes them.
json mergeInterleave(const ByIndex& byIndex, int n, SweepSection sweep, std::optional<Verdict> baseline, int baselineOf) {
  InterleaveGrid& grid = *sweep.interleave;
  grid.rows.clear();
  SweepShards all;
  all.baselineOf = baselineOf;
  for (const auto& [i, s] : byIndex) {
    const SweepSection own = s->report.at("sweep").get<SweepSection>();
    if (!own.interleave)
      throw UsageError(fmt::format("merge: {} is a shard of a sweep without --interleave, shard 0 of one with it", s->dir));
    int ran = 0; // the shard's hold runs
    for (const auto& row : own.interleave->rows) {
      if (!row.index)
        throw UsageError(fmt::format("merge: {}: field '/sweep/interleave/rows': a row without its index", s->dir));
      grid.rows.push_back(row);
      ran += static_cast<int>(row.cells.size());
    }
    all.add(i, s, ran);
  }
  std::sort(grid.rows.begin(), grid.rows.end(), [](const InterleaveRow& a, const InterleaveRow& b) { return *a.index < *b.index; });
  // The unsharded grid's runs: the baseline, then each cell's run (named by its hold) row by row.
  std::map<std::string, size_t> place;
  int failed = baseline == Verdict::Fail ? 1 : 0, unknown = 0, notFired = 0;
  size_t cells = 0;
  for (auto& row : grid.rows) {
    row.index.reset();
    for (const auto& c : row.cells) {
      place.emplace(c.point, ++cells);
      failed += c.verdict == Verdict::Fail;
      unknown += c.verdict != Verdict::Fail && c.verdict != Verdict::Pass;
      notFired += !c.fired;
    }
  }
  all.order([&](const json& run) {
    auto it = place.find(run.value("id", ""));
    return run.value("id", "") == "baseline" ? size_t(0) : it == place.end() ? cells + 1 : it->second;
  });
  grid.failed = sweep.failed = failed;
  grid.unknown = sweep.unknown = unknown;
  grid.notFired = sweep.notFired = notFired;
  const bool traceUsable = baseline == Verdict::Pass || baseline == Verdict::Fail;
  const Verdict verdict = sweepVerdict({failed, unknown, notFired, traceUsable, false, all.error, all.interrupted});
  return all.merged(byIndex, n, sweep, verdict, cells + 1);
}

} // namespace

json mergeSweep(const ByIndex& byIndex, int n) {
  const json& first = byIndex.at(0)->report;
  // The shards' faults were planned alike (their digests agree, checked before), so a fault-free run that
  // failed in one shard and passed in another, as a consumer racing by itself may, is one sweep whose
  // baseline failed: the merged report keeps the first failing shard's. A baseline without a usable trace
  // (unknown, error) planned nothing, and its shards are not one sweep with the others.
  const std::optional<Verdict> first0 = byIndex.at(0).shard.baseline;
  auto usable = [](const std::optional<Verdict>& v) { return v == Verdict::Pass || v == Verdict::Fail; };
  auto shown = [](const std::optional<Verdict>& v) { return v ? json(toString(*v)).dump() : std::string("null"); };
  std::optional<Verdict> baseline = first0;
  int baselineOf = 0;
  for (const auto& [i, s] : byIndex) {
    if (s.shard.baseline == first0) continue;
    if (!usable(s.shard.baseline) || !usable(first0))
      throw UsageError(fmt::format("merge: the fault-free baseline of shard {} is {} and of shard 0 {}: their points "
                                   "may differ, so they cannot be one sweep", i, shown(s.shard.baseline), shown(first0)));
    if (s.shard.baseline == Verdict::Fail && baseline != Verdict::Fail) baseline = Verdict::Fail, baselineOf = i;
  }
  SweepSection sweep = first.at("sweep").get<SweepSection>();
  if (sweep.interleave) return mergeInterleave(byIndex, n, std::move(sweep), baseline, baselineOf);
  sweep.points.clear();
  sweep.notRun = 0;
  SweepShards all;
  all.baselineOf = baselineOf;
  for (const auto& [i, s] : byIndex) {
    const SweepSection own = s->report.at("sweep").get<SweepSection>();
    sweep.points.insert(sweep.points.end(), own.points.begin(), own.points.end());
    sweep.notRun += own.notRun;
    all.add(i, s, static_cast<int>(own.points.size()));
  }
  auto& points = sweep.points;
  std::sort(points.begin(), points.end(), [](const SweepPoint& a, const SweepPoint& b) { return a.index < b.index; });
  // The unsharded sweep's order: the baseline, then the runs in the order of their points (a run is named
  // by its fault, as its point is); the index is the shard's, the unsharded sweep has none.
  std::map<std::string, size_t> place;
  for (size_t k = 0; k < points.size(); ++k) place.emplace(points[k].point, k);
  all.order([&](const json& run) {
    const std::string id = run.value("id", "");
    if (id == "baseline") return size_t(0);
    auto it = place.find(id);
    return it == place.end() ? points.size() + 1 : it->second + 1;
  });
  for (auto& p : points) p.index.reset();
  // The unsharded sweep's counts and verdict (driver/sweep.cc).
  sweep.failed = baseline == Verdict::Fail ? 1 : 0;
  sweep.unknown = sweep.notFired = 0;
  for (const auto& p : points) {
    sweep.failed += p.verdict == Verdict::Fail;
    sweep.unknown += p.verdict != Verdict::Fail && p.verdict != Verdict::Pass;
    sweep.notFired += !p.fired;
  }
  const bool traceUsable = baseline == Verdict::Pass || baseline == Verdict::Fail;
  const bool noFaults = points.empty() && sweep.noFaults.has_value(); // ran none at all
  const Verdict verdict =
      sweepVerdict({sweep.failed, sweep.unknown, sweep.notFired, traceUsable, noFaults, all.error, all.interrupted});
  return all.merged(byIndex, n, sweep, verdict, points.size() + 1);
}

json mergeCompare(const ByIndex& byIndex, int n) {
  const json& first = byIndex.at(0)->report;
  std::vector<CompareSection> own; // each shard's, by index
  for (const auto& entry : byIndex) own.push_back(compareOf(entry.second));
  CompareSection compare = own.at(0);
  // Cell k comes from shard k % N (driver/compare.h, Options::shard).
  const size_t count = compare.cells.size();
  compare.cells.clear();
  for (size_t k = 0; k < count; ++k) compare.cells.push_back(own.at(k % static_cast<size_t>(n)).cells.at(k));
  // Each target's verdict from its cells, as matrixOf computes it (driver/compare.cc).
  bool anyFail = false, unknownCells = false;
  for (auto& t : compare.targets) {
    t.kinds.clear();
    t.example.clear();
    t.verdict = Verdict::Pass;
    t.unknownCells = 0;
    for (const auto& c : compare.cells) {
      if (c.target != t.name || c.sinkPolicy != t.sinkPolicy) continue; // its column
      t.kinds.insert(c.kinds.begin(), c.kinds.end());
      if (c.unknown > 0) ++t.unknownCells;
      if (c.verdict == Verdict::Fail && t.example.empty()) t.example = c.example;
      t.verdict = foldCellVerdict(t.verdict, c.verdict);
    }
    anyFail = anyFail || t.verdict == Verdict::Fail;
    unknownCells = unknownCells || t.unknownCells > 0;
  }
  // The runs the cells show, in cell order, each from the shard that ran its cell (compare_classes.cc): a
  // failing run's history only for the first cell of its target and violation kinds, as in the unsharded
  // report (a shard saw only its own cells before it, so it may have kept one more).
  std::vector<std::pair<json, int>> runs;
  std::set<std::string> kept;
  std::set<std::pair<std::string, std::set<std::string>>> shown;
  for (size_t k = 0; k < count; ++k) {
    const CompareCell& c = compare.cells[k];
    const std::string& id = c.example;
    if (id.empty() || !kept.insert(id).second) continue;
    const int i = static_cast<int>(k % static_cast<size_t>(n));
    for (const auto& run : byIndex.at(i)->report.value("runs", json::array())) {
      if (run.value("id", "") != id) continue;
      std::set<std::string> kinds;
      for (const auto& v : run.value("violations", json::array())) kinds.insert(v.value("kind", ""));
      json r = relocate(run, i, true);
      if (!shown.insert({run.value("target", "") + "/" + c.sinkPolicy, kinds}).second && c.verdict == Verdict::Fail)
        r.erase("history");
      runs.emplace_back(std::move(r), i);
      break;
    }
  }
  json shards = json::array();
  int64_t schedules = 0;
  for (const auto& [i, s] : byIndex) {
    int64_t ran = s->report.value("timings", json::object()).value("schedules", int64_t(0));
    schedules += ran;
    shards.push_back(shardEntry(i, *s, static_cast<int>(ran)));
  }

  json merged = first;
  merged["verdict"] = toString(compareVerdict(anyFail, unknownCells));
  merged["compare"] = compare;
  setRuns(byIndex, runs, merged);
  merged.erase("processes");
  if (!merged["runs"].empty()) merged["processes"] = merged["runs"][0].value("processes", json::array()); // the report's first run's
  merged["merge"] = {{"shards", shards}, {"count", n}, {"picked", nullptr}, {"runs_up_to", nullptr},
                     {"fail_on_violation", byIndex.at(0).shard.failOnViolation.value_or(false)},
                     {"unknown_cells", unknownCells}};
  sumShards(byIndex, n, schedules, merged);
  return merged;
}

} // namespace idem::merge_detail
