#include "report/check_section.h"

#include "report/section_json.h"

namespace idem {

using section_json::optionalOf;
using section_json::orNull;

namespace {

using json = nlohmann::json;

/// `member` from `key` when the section has it (a report idemproof writes has every member).
template <class T>
void readIf(const json& j, const char* key, T& member) {
  if (j.contains(key)) member = j.at(key).get<T>();
}

template <class T>
void readIf(const json& j, const char* key, std::optional<T>& member) {
  member = optionalOf<T>(j, key);
}

} // namespace

void to_json(json& j, const FaultCount& c) { j = {{"planned", c.planned}, {"fired", c.fired}}; }

void from_json(const json& j, FaultCount& c) {
  c = {};
  readIf(j, "planned", c.planned);
  readIf(j, "fired", c.fired);
}

void to_json(json& j, const CoverageLossExample& e) {
  j = {{"run", e.run}, {"schedule", e.schedule}, {"not_fired", e.notFired}};
}

void from_json(const json& j, CoverageLossExample& e) {
  e = {};
  e.run = j.at("run").get<int64_t>();
  readIf(j, "schedule", e.schedule);
  readIf(j, "not_fired", e.notFired);
}

void to_json(json& j, const TriedShape& t) { j = {{"what", t.what}, {"summary", t.summary}, {"verdicts", t.verdicts}}; }

void from_json(const json& j, TriedShape& t) {
  t = {};
  readIf(j, "what", t.what);
  readIf(j, "summary", t.summary);
  readIf(j, "verdicts", t.verdicts);
}

CheckFinding CounterexampleSection::finding() const {
  CheckFinding f;
  f.flaky = flaky;
  f.verdicts = verdicts;
  f.tried = tried;
  f.flakyCandidates = static_cast<size_t>(flakyCandidates);
  f.foundVerdicts = found.verdicts;
  return f;
}

void to_json(json& j, const CounterexampleSection& c) {
  // Grouped by what a reader asks: what it is, how to replay it, how it shrank, how sure it is, where the
  // search found it.
  j = {{"schedule", c.schedule}, {"summary", c.summary}, {"verdicts", c.verdicts},
       {"file", c.file}, {"replay_command", c.replayCommand},
       {"shrink_steps", c.shrinkSteps}, {"shrink_runs", c.shrinkRuns},
       {"replays", c.replays}, {"flaky", c.flaky}, {"flaky_candidates", c.flakyCandidates},
       {"reduced", orNull(c.reduced)}, {"tried", c.tried},
       {"found", {{"run", c.found.run}, {"schedule", c.found.schedule}, {"summary", c.found.summary},
                  {"verdicts", c.found.verdicts}}}};
}

void from_json(const json& j, CounterexampleSection& c) {
  c = {};
  readIf(j, "schedule", c.schedule);
  readIf(j, "summary", c.summary);
  readIf(j, "verdicts", c.verdicts);
  readIf(j, "file", c.file);
  readIf(j, "replay_command", c.replayCommand);
  readIf(j, "shrink_steps", c.shrinkSteps);
  readIf(j, "shrink_runs", c.shrinkRuns);
  readIf(j, "replays", c.replays);
  readIf(j, "flaky", c.flaky);
  readIf(j, "flaky_candidates", c.flakyCandidates);
  readIf(j, "reduced", c.reduced);
  readIf(j, "tried", c.tried);
  const json& found = j.at("found");
  c.found.run = found.at("run").get<int64_t>();
  readIf(found, "schedule", c.found.schedule);
  readIf(found, "summary", c.found.summary);
  readIf(found, "verdicts", c.found.verdicts);
}

void CheckSection::setCounts(const CheckCounts& c) {
  runs = c.runs;
  runsRequested = c.runsRequested;
  passed = c.passed;
  failed = c.failed;
  unknown = c.unknown;
  errors = c.errors;
  outOfTime = c.outOfTime;
  interrupted.reset();
  if (!c.interrupted.empty()) interrupted = c.interrupted;
  setCoverage(c.coverage);
}

void CheckSection::setCoverage(const FaultCoverage& c) {
  coverage.clear();
  coverageByKind.clear();
  for (const auto& [verb, pf] : c.byVerb) coverage[verb] = {pf.first, pf.second};
  for (const auto& [kind, verbs] : c.byKind)
    for (const auto& [verb, pf] : verbs) coverageByKind[kind][verb] = {pf.first, pf.second};
  coverageSummary.planned = c.planned();
  coverageSummary.fired = c.fired();
  coverageSummary.runsWithKills = c.runsWithKills;
  coverageSummary.runsWithLoss = c.runsWithLoss;
  coverageSummary.neverFired = c.neverFired();
}

FaultCoverage CheckSection::faultCoverage() const {
  FaultCoverage c;
  for (const auto& [kind, verbs] : coverageByKind)
    for (const auto& [verb, n] : verbs) {
      c.byKind[kind][verb] = {n.planned, n.fired};
      c.byVerb[verb].first += n.planned;
      c.byVerb[verb].second += n.fired;
    }
  c.runsWithKills = coverageSummary.runsWithKills;
  c.runsWithLoss = coverageSummary.runsWithLoss;
  return c;
}

CheckCounts CheckSection::counts() const {
  CheckCounts c;
  c.runsRequested = runsRequested;
  c.runs = runs;
  c.passed = passed;
  c.failed = failed;
  c.unknown = unknown;
  c.errors = errors;
  c.outOfTime = outOfTime;
  c.interrupted = interrupted.value_or("");
  c.coverage = faultCoverage();
  return c;
}

void to_json(json& j, const CheckSection& s) {
  const CoverageSummary& cs = s.coverageSummary;
  j = {{"runs", s.runs}, {"runs_requested", s.runsRequested}, {"out_of_time", s.outOfTime},
       {"interrupted", orNull(s.interrupted)}, {"seed", s.seed}, {"seed_given", s.seedGiven},
       {"max_events", s.maxEvents}, {"consumers", s.consumers}, {"replays", s.replays},
       {"passed", s.passed}, {"failed", s.failed}, {"unknown", s.unknown}, {"errors", s.errors}, {"flaky", s.flaky},
       {"coverage", s.coverage}, {"coverage_by_kind", s.coverageByKind},
       {"coverage_summary",
        {{"planned", cs.planned}, {"fired", cs.fired}, {"runs_with_kills", cs.runsWithKills},
         {"runs_with_coverage_loss", cs.runsWithLoss}, {"never_fired", cs.neverFired},
         {"coverage_loss_examples", cs.lossExamples}}},
       {"kill_model", s.killModel}, {"counterexample", orNull(s.counterexample)},
       {"faults", s.faults}, {"notes", s.notes}, {"run_summaries", s.runSummaries}};
}

void from_json(const json& j, CheckSection& s) {
  s = {};
  readIf(j, "runs", s.runs);
  readIf(j, "runs_requested", s.runsRequested);
  readIf(j, "out_of_time", s.outOfTime);
  readIf(j, "interrupted", s.interrupted);
  readIf(j, "seed", s.seed);
  readIf(j, "seed_given", s.seedGiven);
  readIf(j, "max_events", s.maxEvents);
  readIf(j, "consumers", s.consumers);
  readIf(j, "replays", s.replays);
  readIf(j, "passed", s.passed);
  readIf(j, "failed", s.failed);
  readIf(j, "unknown", s.unknown);
  readIf(j, "errors", s.errors);
  readIf(j, "flaky", s.flaky);
  readIf(j, "coverage", s.coverage);
  readIf(j, "coverage_by_kind", s.coverageByKind);
  if (j.contains("coverage_summary")) {
    const json& cs = j.at("coverage_summary");
    readIf(cs, "planned", s.coverageSummary.planned);
    readIf(cs, "fired", s.coverageSummary.fired);
    readIf(cs, "runs_with_kills", s.coverageSummary.runsWithKills);
    readIf(cs, "runs_with_coverage_loss", s.coverageSummary.runsWithLoss);
    readIf(cs, "never_fired", s.coverageSummary.neverFired);
    readIf(cs, "coverage_loss_examples", s.coverageSummary.lossExamples);
  }
  readIf(j, "kill_model", s.killModel);
  readIf(j, "counterexample", s.counterexample);
  readIf(j, "faults", s.faults);
  readIf(j, "notes", s.notes);
  readIf(j, "run_summaries", s.runSummaries);
}

} // namespace idem
