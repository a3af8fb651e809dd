#include "report/merge.h"

#include "core/error.h"
#include "core/verdict.h"
#include "plan/fault.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>

namespace idem {

namespace {

using json = nlohmann::json;

/// The fields that must be equal in every shard, with the name a reason gives them.
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

/// The run of a shard's counterexample as the search found it (1-based), or none.
std::optional<int64_t> foundRun(const json& r) {
  const json& cx = r["check"].value("counterexample", json(nullptr));
  if (cx.is_null()) return std::nullopt;
  return cx.at("found").at("run").get<int64_t>();
}

struct Counts {
  std::map<std::string, std::pair<int, int>> byVerb;
  std::map<std::string, std::map<std::string, std::pair<int, int>>> byKind;
  int runsWithKills = 0, runsWithLoss = 0;
  int planned() const {
    int n = 0;
    for (const auto& [v, pf] : byVerb) n += pf.first;
    return n;
  }
  int fired() const {
    int n = 0;
    for (const auto& [v, pf] : byVerb) n += pf.second;
    return n;
  }
};

/// Fault coverage of the runs, counted as check counts it (search/case_result.h, Coverage::add).
Counts coverageOf(const std::vector<json>& runs) {
  Counts c;
  for (const auto& r : runs) {
    const auto& planned = r.at("planned");
    const auto& fired = r.at("fired");
    if (!planned.empty()) ++c.runsWithKills;
    if (fired.size() < planned.size()) ++c.runsWithLoss;
    for (const auto& p : planned) {
      Fault f = Fault::parse(p.get<std::string>(), "merge");
      c.byVerb[f.verb].first++;
      c.byKind[f.kind][f.verb].first++;
    }
    for (const auto& p : fired) {
      Fault f = Fault::parse(p.get<std::string>(), "merge");
      c.byVerb[f.verb].second++;
      c.byKind[f.kind][f.verb].second++;
    }
  }
  return c;
}

/// A run of shard `index` as the merged report holds it: its id tagged with the shard unless `keepId`,
/// its log paths under the shard's folder.
json relocate(json run, int index, bool keepId) {
  if (!keepId) run["id"] = shardFolder(index) + run.value("id", std::string("run"));
  for (auto& p : run["processes"])
    if (p.contains("log") && p["log"].is_string()) p["log"] = shardFolder(index) + p["log"].get<std::string>();
  return run;
}

} // namespace

std::string shardFolder(int index) { return fmt::format("shard-{}/", index); }

namespace {

using ByIndex = std::map<int, const ShardReport*>;

json mergeCheck(const ByIndex& byIndex, int n);
json mergeSweep(const ByIndex& byIndex, int n);
json mergeCompare(const ByIndex& byIndex, int n);

} // namespace

json mergeReports(const std::vector<ShardReport>& shards) {
  if (shards.empty()) throw UsageError("merge: no shard reports given");
  auto fail = [](const std::string& why) { return UsageError("merge: " + why); };
  for (const auto& s : shards) {
    if (!s.report.is_object() || !s.report.contains("shard"))
      throw fail(fmt::format("{} is not the report of a shard (run check, sweep or compare with --shard I/N)", s.dir));
    std::string command = s.report.value("command", "?");
    if (command != "check" && command != "sweep" && command != "compare")
      throw fail(fmt::format("{}: shards of {} cannot be merged (check, sweep and compare can)", s.dir, command));
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
  return command == "sweep" ? mergeSweep(byIndex, n) : command == "compare" ? mergeCompare(byIndex, n) : mergeCheck(byIndex, n);
}

namespace {

json mergeCheck(const ByIndex& byIndex, int n) {
  auto fail = [](const std::string& why) { return UsageError("merge: " + why); };
  const json& first = byIndex.at(0)->report;
  for (const auto& [i, s] : byIndex)
    if (s->report["check"].value("kill_model", json()) != first["check"].value("kill_model", json()))
      throw fail(fmt::format("shards 0 and {} learned different kill models from the target's fault-free trace: "
                             "their schedules differ, so they cannot be one run", i));

  // The lowest failure of all shards: the unsharded search stops there.
  std::optional<int> picked;
  int64_t cut = std::numeric_limits<int64_t>::max();
  for (const auto& [i, s] : byIndex)
    if (auto f = foundRun(s->report); f && *f < cut) {
      cut = *f;
      picked = i;
    }
  std::vector<json> runs;
  for (const auto& [i, s] : byIndex)
    for (const auto& r : s->report.at("/shard/runs"_json_pointer))
      if (r.at("run").get<int64_t>() <= cut) runs.push_back(r);
  std::sort(runs.begin(), runs.end(), [](const json& a, const json& b) { return a.at("run") < b.at("run"); });

  int passed = 0, failed = 0, unknown = 0, errors = 0;
  std::string firstProblem;
  for (const auto& r : runs) {
    std::string v = r.at("verdict");
    if (v == "pass") passed++;
    else if (v == "fail") failed++;
    else if (v == "error") errors++;
    else unknown++;
    if ((v == "unknown" || v == "error") && firstProblem.empty())
      firstProblem = fmt::format("run {}: {}", r.at("run").get<int64_t>(), r.value("reason", std::string()));
  }
  Counts cov = coverageOf(runs);
  std::vector<std::string> neverFired;
  for (const auto& [v, pf] : cov.byVerb)
    if (pf.first > 0 && pf.second == 0) neverFired.push_back(v);
  std::vector<json> lossExamples;
  for (const auto& [i, s] : byIndex)
    for (const auto& e : s->report["check"]["coverage_summary"].value("coverage_loss_examples", json::array()))
      if (e.at("run").get<int64_t>() <= cut) lossExamples.push_back(e);
  std::sort(lossExamples.begin(), lossExamples.end(), [](const json& a, const json& b) { return a.at("run") < b.at("run"); });
  if (lossExamples.size() > 5) lossExamples.resize(5);

  // The verdict, by check's rules (driver/check_report.cc, decideVerdict) over the merged runs.
  std::vector<std::string> notes;
  Verdict verdict = Verdict::Pass;
  bool traceError = false;
  for (const auto& [i, s] : byIndex)
    if (s->report.value("verdict", "") == "error" && !foundRun(s->report) && s->report.at("/check/runs"_json_pointer) == 0) {
      traceError = true;
      notes.push_back(fmt::format("shard {}: {}", i, s->report.value("error", std::string("could not be judged"))));
    }
  if (cov.runsWithLoss > 0)
    notes.push_back(fmt::format("{} run{} had a fault that never fired (coverage loss, not a failure of the target)",
                                cov.runsWithLoss, cov.runsWithLoss == 1 ? "" : "s"));
  json cx = nullptr;
  if (picked) {
    cx = byIndex.at(*picked)->report["check"]["counterexample"];
    verdict = cx.value("flaky", false) ? Verdict::Flaky : Verdict::Fail;
    notes.push_back(fmt::format("the lowest failing run, {}, was found and shrunk by shard {}/{}", cut, *picked, n));
  } else if (traceError) {
    verdict = Verdict::Error;
  } else {
    std::vector<std::string> why;
    if (runs.empty()) why.push_back("no schedule ran");
    if (errors > 0) why.push_back(fmt::format("{} run{} could not be judged (first: {})", errors, errors == 1 ? "" : "s", firstProblem));
    if (unknown > 0) why.push_back(fmt::format("{} run{} had an unknown result (first: {})", unknown, unknown == 1 ? "" : "s", firstProblem));
    if (!runs.empty() && cov.fired() == 0)
      why.push_back(fmt::format("no fault fired in any run ({} planned)", cov.planned()));
    else if (cov.planned() > 0 && 2 * cov.fired() < cov.planned())
      why.push_back(fmt::format("only {} of {} planned faults fired (below half)", cov.fired(), cov.planned()));
    for (const auto& v : neverFired)
      why.push_back(fmt::format("the target never reached a {} step where a fault was asked for", v));
    for (const auto& [i, s] : byIndex)
      if (s->report["check"].value("out_of_time", false)) why.push_back(fmt::format("shard {} ran out of its time budget", i));
    notes.insert(notes.end(), why.begin(), why.end());
    if (!why.empty()) verdict = Verdict::Unknown;
  }

  json merged = first;
  merged.erase("shard");
  merged.erase("error");
  merged["verdict"] = toString(verdict);
  merged.erase("schedule");
  merged.erase("processes");
  json allRuns = json::array(), violations = json::array(), shardList = json::array();
  int64_t totalMs = 0, slowestMs = 0, searchMs = 0;
  for (const auto& [i, s] : byIndex) {
    const json& r = s->report;
    bool isPicked = picked && *picked == i;
    for (const auto& run : r.value("runs", json::array())) {
      bool keep = isPicked && run.value("id", "") == "counterexample";
      allRuns.push_back(relocate(run, i, keep));
    }
    for (auto v : r.value("violations", json::array())) {
      if (!(isPicked && v.value("run", "") == "counterexample")) v["run"] = shardFolder(i) + v.value("run", std::string());
      violations.push_back(v);
    }
    if (isPicked) {
      if (r.contains("schedule")) merged["schedule"] = r["schedule"];
      if (r.contains("processes")) {
        json p = r["processes"];
        for (auto& x : p)
          if (x.contains("log") && x["log"].is_string()) x["log"] = shardFolder(i) + x["log"].get<std::string>();
        merged["processes"] = p;
      }
    }
    int64_t ms = r.value("timings", json::object()).value("total_ms", int64_t(0));
    totalMs += ms;
    slowestMs = std::max(slowestMs, ms);
    searchMs = std::max(searchMs, r.value("timings", json::object()).value("search_ms", int64_t(0)));
    json entry = {{"index", i}, {"dir", s->dir}, {"verdict", r.value("verdict", "unknown")},
                  {"runs", r["check"].value("runs", 0)}, {"folder", shardFolder(i)}};
    const json& scx = r["check"].value("counterexample", json(nullptr));
    entry["counterexample"] = scx.is_null() ? json(nullptr)
                                            : json{{"run", scx["found"]["run"]}, {"summary", scx.value("summary", "")},
                                                   {"file", shardFolder(i) + "counterexample.json"},
                                                   {"flaky", scx.value("flaky", false)}};
    shardList.push_back(entry);
  }
  if (picked && cx.is_object()) cx["file"] = shardFolder(*picked) + "counterexample.json";
  // The report's counterexample first: the page and the JUnit file show it before the other shards' own.
  auto cxFirst = [](const char* key) {
    return [key](const json& x) { return x.value(key, std::string()) == "counterexample"; };
  };
  std::stable_partition(allRuns.begin(), allRuns.end(), cxFirst("id"));
  std::stable_partition(violations.begin(), violations.end(), cxFirst("run"));
  merged["runs"] = allRuns;
  merged["violations"] = violations;
  merged["options"]["workers"] = 0; // set below: the shards' workers summed
  int workers = 0;
  for (const auto& [i, s] : byIndex) workers += s->report["options"].value("workers", 0);
  merged["options"]["workers"] = std::max(1, workers);

  json& check = merged["check"];
  check["runs"] = static_cast<int>(runs.size());
  check["passed"] = passed;
  check["failed"] = failed;
  check["unknown"] = unknown;
  check["errors"] = errors;
  check["out_of_time"] = false;
  int flaky = 0;
  for (const auto& [i, s] : byIndex) flaky += s->report["check"].value("flaky", 0);
  check["flaky"] = flaky;
  json byVerb = json::object(), byKind = json::object();
  for (const auto& [v, pf] : cov.byVerb) byVerb[v] = {{"planned", pf.first}, {"fired", pf.second}};
  for (const auto& [k, verbs] : cov.byKind)
    for (const auto& [v, pf] : verbs) byKind[k][v] = {{"planned", pf.first}, {"fired", pf.second}};
  check["coverage"] = byVerb;
  check["coverage_by_kind"] = byKind;
  check["coverage_summary"] = {{"planned", cov.planned()}, {"fired", cov.fired()}, {"runs_with_kills", cov.runsWithKills},
                               {"runs_with_coverage_loss", cov.runsWithLoss}, {"never_fired", neverFired},
                               {"coverage_loss_examples", lossExamples}};
  check["counterexample"] = cx;
  check["notes"] = notes;
  merged["merge"] = {{"shards", shardList}, {"count", n}, {"picked", picked ? json(*picked) : json(nullptr)},
                     {"runs_up_to", picked ? json(cut) : json(nullptr)}};
  merged["timings"] = {{"total_ms", totalMs}, {"schedules", static_cast<int64_t>(runs.size())},
                       {"slowest_shard_ms", slowestMs}, {"search_ms", searchMs}, {"shards", n}};
  return merged;
}

json mergeSweep(const ByIndex& byIndex, int n) {
  const json& first = byIndex.at(0)->report;
  for (const auto& [i, s] : byIndex)
    if (s->report.at("/shard/baseline"_json_pointer) != first.at("/shard/baseline"_json_pointer))
      throw UsageError(fmt::format("merge: the fault-free baseline of shard {} is {} and of shard 0 {}: their points "
                                   "may differ, so they cannot be one sweep", i, s->report["shard"]["baseline"].dump(),
                                   first["shard"]["baseline"].dump()));
  std::vector<json> points;
  json allRuns = json::array(), violations = json::array(), shardList = json::array();
  int64_t totalMs = 0, slowestMs = 0;
  bool error = false;
  for (const auto& [i, s] : byIndex) {
    const json& r = s->report;
    for (const auto& p : r["sweep"]["points"]) points.push_back(p);
    for (const auto& run : r.value("runs", json::array()))
      if (i == 0 || run.value("id", "") != "baseline") allRuns.push_back(relocate(run, i, true));
    for (const auto& v : r.value("violations", json::array()))
      if (i == 0 || v.value("run", "") != "baseline") violations.push_back(v);
    error = error || r.value("verdict", "") == "error";
    int64_t ms = r.value("timings", json::object()).value("total_ms", int64_t(0));
    totalMs += ms;
    slowestMs = std::max(slowestMs, ms);
    shardList.push_back({{"index", i}, {"dir", s->dir}, {"verdict", r.value("verdict", "unknown")},
                         {"runs", r["sweep"]["points"].size()}, {"folder", shardFolder(i)}, {"counterexample", nullptr}});
  }
  std::sort(points.begin(), points.end(), [](const json& a, const json& b) { return a.at("index") < b.at("index"); });
  const std::string baseline = first["shard"]["baseline"];
  int fails = baseline == "fail" ? 1 : 0, unknown = 0, notFired = 0;
  for (const auto& p : points) {
    std::string v = p.at("verdict");
    fails += v == "fail";
    unknown += v != "fail" && v != "pass";
    notFired += !p.at("fired").get<bool>();
  }
  const bool traceUsable = baseline == "pass" || baseline == "fail";
  Verdict verdict = fails ? Verdict::Fail : (unknown || notFired || !traceUsable) ? Verdict::Unknown : Verdict::Pass;
  if (error) verdict = Verdict::Error;
  json merged = first;
  merged.erase("shard");
  merged["verdict"] = toString(verdict);
  merged["runs"] = allRuns;
  merged["violations"] = violations;
  if (merged.contains("processes"))
    for (auto& x : merged["processes"])
      if (x.contains("log") && x["log"].is_string()) x["log"] = shardFolder(0) + x["log"].get<std::string>();
  int workers = 0;
  for (const auto& [i, s] : byIndex) workers += s->report["options"].value("workers", 0);
  merged["options"]["workers"] = std::max(1, workers);
  merged["sweep"]["points"] = points;
  merged["sweep"]["failed"] = fails;
  merged["sweep"]["unknown"] = unknown;
  merged["sweep"]["not_fired"] = notFired;
  merged["merge"] = {{"shards", shardList}, {"count", n}, {"picked", nullptr}, {"runs_up_to", nullptr}};
  merged["timings"] = {{"total_ms", totalMs}, {"schedules", static_cast<int64_t>(points.size() + 1)},
                       {"slowest_shard_ms", slowestMs}, {"shards", n}};
  return merged;
}

/// Cell k of the matrix comes from shard k % N (driver/compare.h, Options::shard); the targets' verdicts
/// are recomputed from the cells as matrixOf computes them.
json mergeCompare(const ByIndex& byIndex, int n) {
  const json& first = byIndex.at(0)->report;
  const json& cells0 = first["compare"]["cells"];
  json cells = json::array();
  std::set<std::string> examples;
  for (size_t k = 0; k < cells0.size(); ++k) {
    const json& c = byIndex.at(static_cast<int>(k % static_cast<size_t>(n)))->report["compare"]["cells"].at(k);
    cells.push_back(c);
    if (!c.value("example", std::string()).empty()) examples.insert(c["example"].get<std::string>());
  }
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
    t["kinds"] = kinds;
    t["verdict"] = verdict;
    t["example"] = example;
    t["unknown_cells"] = unknown;
    anyFail = anyFail || verdict == "fail";
    unknownCells = unknownCells || unknown > 0;
  }
  json allRuns = json::array(), violations = json::array(), shardList = json::array();
  std::set<std::string> kept;
  int64_t totalMs = 0, slowestMs = 0, schedules = 0;
  for (const auto& [i, s] : byIndex) {
    const json& r = s->report;
    for (const auto& run : r.value("runs", json::array())) {
      std::string id = run.value("id", "");
      if (!examples.count(id) || !kept.insert(id).second) continue;
      // The cell's owner ran it; a baseline (default class) example is taken from the first shard holding it.
      allRuns.push_back(relocate(run, i, true));
    }
    int64_t ms = r.value("timings", json::object()).value("total_ms", int64_t(0));
    totalMs += ms;
    slowestMs = std::max(slowestMs, ms);
    schedules += r.value("timings", json::object()).value("schedules", int64_t(0));
    shardList.push_back({{"index", i}, {"dir", s->dir}, {"verdict", r.value("verdict", "unknown")},
                         {"runs", r.value("timings", json::object()).value("schedules", 0)}, {"folder", shardFolder(i)},
                         {"counterexample", nullptr}});
  }
  for (const auto& [i, s] : byIndex)
    for (const auto& v : s->report.value("violations", json::array()))
      if (kept.count(v.value("run", "")) && std::none_of(violations.begin(), violations.end(), [&](const json& x) { return x == v; }))
        violations.push_back(v);
  Verdict verdict = anyFail ? Verdict::Fail : unknownCells ? Verdict::Unknown : Verdict::Pass;
  json merged = first;
  merged.erase("shard");
  merged["verdict"] = toString(verdict);
  merged["compare"]["cells"] = cells;
  merged["compare"]["targets"] = targets;
  merged["runs"] = allRuns;
  merged["violations"] = violations;
  merged.erase("processes");
  int workers = 0;
  for (const auto& [i, s] : byIndex) workers += s->report["options"].value("workers", 0);
  merged["options"]["workers"] = std::max(1, workers);
  merged["merge"] = {{"shards", shardList}, {"count", n}, {"picked", nullptr}, {"runs_up_to", nullptr},
                     {"fail_on_violation", first["shard"].value("fail_on_violation", false)},
                     {"unknown_cells", unknownCells}};
  merged["timings"] = {{"total_ms", totalMs}, {"schedules", schedules}, {"slowest_shard_ms", slowestMs}, {"shards", n}};
  return merged;
}

} // namespace

int mergedExitStatus(const json& merged) {
  if (merged.value("command", "") == "compare") {
    const json& m = merged["merge"];
    if (m.value("unknown_cells", false)) return 2;
    return m.value("fail_on_violation", false) && merged.value("verdict", "") == "fail" ? 1 : 0;
  }
  return exitStatus(verdictFromString(merged.value("verdict", "unknown")));
}

} // namespace idem
