/// The merge of check shards (report/merge.h says why the result is the unsharded check's): the cut at the
/// lowest failure of all shards, the runs up to it recounted, the verdict by check's rules, and every
/// shard's runs and counterexample kept under its folder.
#include "core/error.h"
#include "core/verdict.h"
#include "plan/fault.h"
#include "plan/schedule.h"
#include "report/check_section.h"
#include "report/check_verdict.h"
#include "report/merge_detail.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>

namespace idem::merge_detail {

namespace {

/// Shard index -> its "check" section.
using Checks = std::map<int, CheckSection>;

/// Where the unsharded search stops: the lowest failing run of all shards (1-based) and the shard whose
/// search found it; no shard when none failed (every run counts).
struct Cut {
  std::optional<int> shard;
  int64_t run = std::numeric_limits<int64_t>::max();
};

Cut lowestFailure(const Checks& checks) {
  Cut c;
  for (const auto& [i, check] : checks)
    if (check.counterexample && check.counterexample->found.run < c.run) {
      c.run = check.counterexample->found.run;
      c.shard = i;
    }
  return c;
}

/// The shards' run lists (report "shard"."runs", the same entries as their "check"."run_summaries") up to
/// the cut, in run order: the merged report's run summaries.
std::vector<RunSummaryEntry> runsUpTo(const ByIndex& byIndex, const Cut& cut) {
  std::vector<RunSummaryEntry> runs;
  for (const auto& [i, s] : byIndex)
    for (const auto& r : s.shard.runs.value_or(std::vector<RunSummaryEntry>()))
      if (r.run <= cut.run) runs.push_back(r);
  std::sort(runs.begin(), runs.end(), [](const RunSummaryEntry& a, const RunSummaryEntry& b) { return a.run < b.run; });
  return runs;
}

/// The run summaries' verdicts and fault coverage, as check counts them (driver/check.cc), with the first
/// unknown or error run named as check names it ("run N, SCHEDULE: reason"), its schedule read from the
/// run record of the shard that ran it.
void countRuns(const ByIndex& byIndex, const std::vector<RunSummaryEntry>& runs, CheckCounts& c) {
  const RunSummaryEntry* first = nullptr;
  for (const auto& r : runs) {
    const Verdict v = r.verdict;
    if (v == Verdict::Pass) c.passed++;
    else if (v == Verdict::Fail) c.failed++;
    else if (v == Verdict::Error) c.errors++;
    else c.unknown++;
    if ((v == Verdict::Unknown || v == Verdict::Error) && !first) first = &r;
    std::vector<Fault> planned, fired;
    for (const auto& p : r.planned) planned.push_back(Fault::parse(p, "merge"));
    for (const auto& p : r.fired) fired.push_back(Fault::parse(p, "merge"));
    c.coverage.add(planned, fired, r.processes.value_or(1));
  }
  c.runs = static_cast<int>(runs.size());
  if (!first) return;
  const int64_t n = first->run;
  const std::string reason = first->reason.value_or(std::string());
  c.firstProblem = fmt::format("run {}: {}", n, reason);
  const std::string id = fmt::format("run-{}", n);
  for (const auto& [i, s] : byIndex)
    for (const auto& run : s->report.value("runs", json::array()))
      if (run.value("id", "") == id && run.contains("schedule"))
        c.firstProblem = fmt::format("run {}, {}: {}", n, scheduleFromJson(run["schedule"], s->dir).summary(), reason);
}

/// The merged check's examples of coverage loss: the first 5 runs up to the cut.
std::vector<CoverageLossExample> lossExamples(const Checks& checks, const Cut& cut) {
  // Each shard lists its first 5 runs with a lost fault: the first 5 of all are among them.
  std::vector<CoverageLossExample> examples;
  for (const auto& [i, c] : checks)
    for (const auto& e : c.coverageSummary.lossExamples)
      if (e.run <= cut.run) examples.push_back(e);
  std::sort(examples.begin(), examples.end(), [](const auto& a, const auto& b) { return a.run < b.run; });
  if (examples.size() > 5) examples.resize(5);
  return examples;
}

/// Whether a shard's fault-free trace could not be judged: it ran no schedule, its verdict is error.
bool traceError(const json& report, const CheckSection& check) {
  return report.value("verdict", "") == "error" && !check.counterexample && check.runs == 0;
}

/// The notes a shard had before its verdict was decided (what its fault-free trace runs taught, an
/// interruption's cut), each once: the shard's notes less those decideCheck added, counted by deciding
/// again over the shard's own counts (the number of notes it adds does not depend on their words).
std::vector<std::string> notesBeforeVerdict(const ByIndex& byIndex, const Checks& checks) {
  std::vector<std::string> out;
  for (const auto& [i, s] : byIndex) {
    const CheckSection& check = checks.at(i);
    const CheckCounts c = check.counts();
    std::optional<CheckFinding> finding;
    if (check.counterexample) finding = check.counterexample->finding();
    std::optional<Verdict> decided;
    if (traceError(s->report, check)) decided = Verdict::Error;
    const CheckDecision d = decideCheck(c, finding ? &*finding : nullptr, decided);
    const std::vector<std::string>& notes = check.notes;
    size_t from = 0, to = notes.size();
    if (!c.interrupted.empty()) from = 1; // its note leads, the others follow unchanged
    const size_t added = d.notes.size() - from;
    to = to >= from + added ? to - added : from;
    for (size_t k = from; k < to; ++k)
      if (std::find(out.begin(), out.end(), notes[k]) == out.end()) out.push_back(notes[k]);
  }
  return out;
}

/// The verdict by check's own rules (report/check_verdict.h) over the merged runs, and its notes. A shard
/// whose fault-free trace could not be judged ran no schedule: the merge is an error, as that check is.
CheckDecision verdictOf(const ByIndex& byIndex, const Checks& checks, const Cut& cut, const CheckCounts& counts) {
  std::optional<Verdict> decided;
  for (const auto& [i, s] : byIndex)
    if (traceError(s->report, checks.at(i))) decided = Verdict::Error;
  std::optional<CheckFinding> finding;
  if (cut.shard) finding = checks.at(*cut.shard).counterexample->finding();
  return decideCheck(counts, finding ? &*finding : nullptr, decided, notesBeforeVerdict(byIndex, checks));
}

/// Every shard's runs and violations (tagged shard-I/, but for the report's counterexample, which comes
/// first), the picked shard's schedule and processes, and the merge section's list of shards.
void gatherShards(const ByIndex& byIndex, const Checks& checks, const Cut& cut, json& merged) {
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
    const CheckSection& check = checks.at(i);
    json entry = shardEntry(i, *s, check.runs);
    if (const auto& cx = check.counterexample)
      entry["counterexample"] = {{"run", cx->found.run}, {"summary", cx->summary},
                                 {"file", shardFolder(i) + "counterexample.json"}, {"flaky", cx->flaky}};
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
  Checks checks;
  for (const auto& [i, s] : byIndex) checks[i] = s->report.at("check").get<CheckSection>();
  const CheckSection& first = checks.at(0);
  for (const auto& [i, check] : checks)
    if (check.killModel != first.killModel)
      throw UsageError(fmt::format("merge: shards 0 and {} learned different kill models from the target's fault-free "
                                   "trace: their schedules differ, so they cannot be one run", i));
  const Cut cut = lowestFailure(checks);
  const std::vector<RunSummaryEntry> runs = runsUpTo(byIndex, cut);
  CheckCounts counts;
  counts.runsRequested = first.runsRequested;
  countRuns(byIndex, runs, counts);
  for (const auto& [i, check] : checks) {
    counts.outOfTime = counts.outOfTime || check.outOfTime;
    if (counts.interrupted.empty() && check.interrupted) counts.interrupted = *check.interrupted;
  }
  const CheckDecision decision = verdictOf(byIndex, checks, cut, counts);

  json merged = byIndex.at(0)->report;
  merged.erase("error");
  if (decision.verdict == Verdict::Error) // the trace run's error, as that shard (and the unsharded check) has it
    for (const auto& [i, s] : byIndex)
      if (s->report.contains("error") && !merged.contains("error")) merged["error"] = s->report["error"];
  merged["verdict"] = toString(decision.verdict);
  merged.erase("interrupted");
  if (!counts.interrupted.empty()) merged["interrupted"] = counts.interrupted;
  gatherShards(byIndex, checks, cut, merged);
  merged["merge"]["count"] = n;
  CheckSection check = first;
  check.setCounts(counts);
  check.coverageSummary.lossExamples = lossExamples(checks, cut);
  check.notes = decision.notes;
  check.runSummaries = runs;
  check.flaky = 0;
  for (const auto& [i, c] : checks) check.flaky += c.flaky;
  check.counterexample.reset();
  if (cut.shard) {
    check.counterexample = checks.at(*cut.shard).counterexample;
    check.counterexample->file = shardFolder(*cut.shard) + "counterexample.json";
  }
  merged["check"] = check;
  int64_t searchMs = 0;
  for (const auto& [i, s] : byIndex)
    searchMs = std::max(searchMs, s->report.value("timings", json::object()).value("search_ms", int64_t(0)));
  sumShards(byIndex, n, static_cast<int64_t>(runs.size()), merged);
  merged["timings"]["search_ms"] = searchMs;
  return merged;
}

} // namespace idem::merge_detail
