/// The merge of check shards (report/merge.h says why the result is the unsharded check's): the cut at the
/// lowest failure of all shards, the runs up to it recounted, the verdict by check's rules, and every
/// shard's runs and counterexample kept under its folder.
#include "core/error.h"
#include "core/verdict.h"
#include "plan/fault.h"
#include "report/merge_detail.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>

namespace idem::merge_detail {

namespace {

/// Where the unsharded search stops: the lowest failing run of all shards (1-based) and the shard whose
/// search found it; no shard when none failed (every run counts).
struct Cut {
  std::optional<int> shard;
  int64_t run = std::numeric_limits<int64_t>::max();
};

std::optional<int64_t> foundRun(const json& r) {
  const json& cx = r["check"].value("counterexample", json(nullptr));
  if (cx.is_null()) return std::nullopt;
  return cx.at("found").at("run").get<int64_t>();
}

Cut lowestFailure(const ByIndex& byIndex) {
  Cut c;
  for (const auto& [i, s] : byIndex)
    if (auto f = foundRun(s->report); f && *f < c.run) {
      c.run = *f;
      c.shard = i;
    }
  return c;
}

bool byRun(const json& a, const json& b) { return a.at("run") < b.at("run"); }

/// The shards' run lists (report "shard"."runs", the same entries as their "check"."run_summaries") up to
/// the cut, in run order: the merged report's run summaries.
std::vector<json> runsUpTo(const ByIndex& byIndex, const Cut& cut) {
  std::vector<json> runs;
  for (const auto& [i, s] : byIndex)
    for (const auto& r : s->report.at("/shard/runs"_json_pointer))
      if (r.at("run").get<int64_t>() <= cut.run) runs.push_back(r);
  std::sort(runs.begin(), runs.end(), byRun);
  return runs;
}

struct Tally {
  int passed = 0, failed = 0, unknown = 0, errors = 0;
  std::string firstProblem; ///< "run N: reason" of the first unknown or error
};

Tally tally(const std::vector<json>& runs) {
  Tally t;
  for (const auto& r : runs) {
    std::string v = r.at("verdict");
    if (v == "pass") t.passed++;
    else if (v == "fail") t.failed++;
    else if (v == "error") t.errors++;
    else t.unknown++;
    if ((v == "unknown" || v == "error") && t.firstProblem.empty())
      t.firstProblem = fmt::format("run {}: {}", r.at("run").get<int64_t>(), r.value("reason", std::string()));
  }
  return t;
}

/// Fault coverage, counted as check counts it (search/case_result.h, Coverage::add): per verb and per
/// kind and verb, (planned, fired).
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
  std::vector<std::string> neverFired() const {
    std::vector<std::string> out;
    for (const auto& [v, pf] : byVerb)
      if (pf.first > 0 && pf.second == 0) out.push_back(v);
    return out;
  }
};

Counts coverageOf(const std::vector<json>& runs) {
  Counts c;
  for (const auto& r : runs) {
    const auto& planned = r.at("planned");
    const auto& fired = r.at("fired");
    if (!planned.empty()) ++c.runsWithKills;
    if (fired.size() < planned.size()) ++c.runsWithLoss;
    for (const auto& [list, fire] : {std::pair{&planned, false}, std::pair{&fired, true}})
      for (const auto& p : *list) {
        Fault f = Fault::parse(p.get<std::string>(), "merge");
        (fire ? c.byVerb[f.verb].second : c.byVerb[f.verb].first)++;
        (fire ? c.byKind[f.kind][f.verb].second : c.byKind[f.kind][f.verb].first)++;
      }
  }
  return c;
}

/// The check section's coverage members, as check_report.cc writes them.
void writeCoverage(const Counts& cov, const ByIndex& byIndex, const Cut& cut, json& check) {
  json byVerb = json::object(), byKind = json::object();
  for (const auto& [v, pf] : cov.byVerb) byVerb[v] = {{"planned", pf.first}, {"fired", pf.second}};
  for (const auto& [k, verbs] : cov.byKind)
    for (const auto& [v, pf] : verbs) byKind[k][v] = {{"planned", pf.first}, {"fired", pf.second}};
  // Each shard lists its first 5 runs with a lost fault: the first 5 of all are among them.
  std::vector<json> examples;
  for (const auto& [i, s] : byIndex)
    for (const auto& e : s->report["check"]["coverage_summary"].value("coverage_loss_examples", json::array()))
      if (e.at("run").get<int64_t>() <= cut.run) examples.push_back(e);
  std::sort(examples.begin(), examples.end(), byRun);
  if (examples.size() > 5) examples.resize(5);
  check["coverage"] = byVerb;
  check["coverage_by_kind"] = byKind;
  check["coverage_summary"] = {{"planned", cov.planned()}, {"fired", cov.fired()}, {"runs_with_kills", cov.runsWithKills},
                               {"runs_with_coverage_loss", cov.runsWithLoss}, {"never_fired", cov.neverFired()},
                               {"coverage_loss_examples", examples}};
}

/// The verdict by check's rules (driver/check_report.cc, decideVerdict) over the merged runs, and the notes
/// that explain it.
Verdict verdictOf(const ByIndex& byIndex, int n, const Cut& cut, const std::vector<json>& runs, const Tally& t,
                  const Counts& cov, std::vector<std::string>& notes) {
  bool traceError = false;
  for (const auto& [i, s] : byIndex)
    if (s->report.value("verdict", "") == "error" && !foundRun(s->report) && s->report.at("/check/runs"_json_pointer) == 0) {
      traceError = true; // its fault-free trace could not be judged: no schedule ran
      notes.push_back(fmt::format("shard {}: {}", i, s->report.value("error", std::string("could not be judged"))));
    }
  if (cov.runsWithLoss > 0)
    notes.push_back(fmt::format("{} run{} had a fault that never fired (coverage loss, not a failure of the target)",
                                cov.runsWithLoss, cov.runsWithLoss == 1 ? "" : "s"));
  if (cut.shard) {
    notes.push_back(fmt::format("the lowest failing run, {}, was found and shrunk by shard {}/{}", cut.run, *cut.shard, n));
    return byIndex.at(*cut.shard)->report["check"]["counterexample"].value("flaky", false) ? Verdict::Flaky : Verdict::Fail;
  }
  if (traceError) return Verdict::Error;
  std::vector<std::string> why;
  auto plural = [](int k) { return k == 1 ? "" : "s"; };
  if (runs.empty()) why.push_back("no schedule ran");
  if (t.errors > 0) why.push_back(fmt::format("{} run{} could not be judged (first: {})", t.errors, plural(t.errors), t.firstProblem));
  if (t.unknown > 0)
    why.push_back(fmt::format("{} run{} had an unknown result (first: {})", t.unknown, plural(t.unknown), t.firstProblem));
  if (!runs.empty() && cov.fired() == 0)
    why.push_back(fmt::format("no fault fired in any run ({} planned)", cov.planned()));
  else if (cov.planned() > 0 && 2 * cov.fired() < cov.planned())
    why.push_back(fmt::format("only {} of {} planned faults fired (below half)", cov.fired(), cov.planned()));
  for (const auto& v : cov.neverFired())
    why.push_back(fmt::format("the target never reached a {} step where a fault was asked for", v));
  for (const auto& [i, s] : byIndex)
    if (s->report["check"].value("out_of_time", false)) why.push_back(fmt::format("shard {} ran out of its time budget", i));
  notes.insert(notes.end(), why.begin(), why.end());
  return why.empty() ? Verdict::Pass : Verdict::Unknown;
}

/// Every shard's runs and violations (tagged shard-I/, but for the report's counterexample, which comes
/// first), the picked shard's schedule and processes, and the merge section's list of shards.
void gatherShards(const ByIndex& byIndex, const Cut& cut, json& merged) {
  json runs = json::array(), violations = json::array(), shards = json::array();
  merged.erase("schedule");
  merged.erase("processes");
  for (const auto& [i, s] : byIndex) {
    const json& r = s->report;
    const bool picked = cut.shard == i;
    for (const auto& run : r.value("runs", json::array()))
      runs.push_back(relocate(run, i, picked && run.value("id", "") == "counterexample"));
    for (auto v : r.value("violations", json::array())) {
      if (!(picked && v.value("run", "") == "counterexample")) v["run"] = shardFolder(i) + v.value("run", std::string());
      violations.push_back(v);
    }
    if (picked && r.contains("schedule")) merged["schedule"] = r["schedule"];
    if (picked && r.contains("processes")) merged["processes"] = relocateProcesses(r["processes"], i);
    json entry = shardEntry(i, *s, r["check"].value("runs", 0));
    const json& cx = r["check"].value("counterexample", json(nullptr));
    if (!cx.is_null())
      entry["counterexample"] = {{"run", cx["found"]["run"]}, {"summary", cx.value("summary", "")},
                                 {"file", shardFolder(i) + "counterexample.json"}, {"flaky", cx.value("flaky", false)}};
    shards.push_back(entry);
  }
  // The report's counterexample first: the page and the JUnit file lead with it, not with shard 0's own.
  auto cxFirst = [](const char* key) { return [key](const json& x) { return x.value(key, std::string()) == "counterexample"; }; };
  std::stable_partition(runs.begin(), runs.end(), cxFirst("id"));
  std::stable_partition(violations.begin(), violations.end(), cxFirst("run"));
  merged["runs"] = runs;
  merged["violations"] = violations;
  merged["merge"] = {{"shards", shards}, {"picked", cut.shard ? json(*cut.shard) : json(nullptr)},
                     {"runs_up_to", cut.shard ? json(cut.run) : json(nullptr)}};
}

} // namespace

json mergeCheck(const ByIndex& byIndex, int n) {
  const json& first = byIndex.at(0)->report;
  for (const auto& [i, s] : byIndex)
    if (s->report["check"].value("kill_model", json()) != first["check"].value("kill_model", json()))
      throw UsageError(fmt::format("merge: shards 0 and {} learned different kill models from the target's fault-free "
                                   "trace: their schedules differ, so they cannot be one run", i));
  const Cut cut = lowestFailure(byIndex);
  const std::vector<json> runs = runsUpTo(byIndex, cut);
  const Tally t = tally(runs);
  const Counts cov = coverageOf(runs);
  std::vector<std::string> notes;
  const Verdict verdict = verdictOf(byIndex, n, cut, runs, t, cov, notes);

  json merged = first;
  merged.erase("error");
  merged["verdict"] = toString(verdict);
  gatherShards(byIndex, cut, merged);
  merged["merge"]["count"] = n;
  json& check = merged["check"];
  check.update({{"runs", static_cast<int>(runs.size())}, {"passed", t.passed}, {"failed", t.failed},
                {"unknown", t.unknown}, {"errors", t.errors}, {"out_of_time", false}, {"notes", notes},
                {"run_summaries", runs}});
  int flaky = 0;
  for (const auto& [i, s] : byIndex) flaky += s->report["check"].value("flaky", 0);
  check["flaky"] = flaky;
  writeCoverage(cov, byIndex, cut, check);
  json cx = nullptr;
  if (cut.shard) {
    cx = byIndex.at(*cut.shard)->report["check"]["counterexample"];
    cx["file"] = shardFolder(*cut.shard) + "counterexample.json";
  }
  check["counterexample"] = cx;
  int64_t searchMs = 0;
  for (const auto& [i, s] : byIndex)
    searchMs = std::max(searchMs, s->report.value("timings", json::object()).value("search_ms", int64_t(0)));
  sumShards(byIndex, n, static_cast<int64_t>(runs.size()), merged);
  merged["timings"]["search_ms"] = searchMs;
  return merged;
}

} // namespace idem::merge_detail
