#include "report/check_verdict.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace idem {

void FaultCoverage::add(const std::vector<Fault>& planned, const std::vector<Fault>& fired, int processes) {
  if (!planned.empty()) ++runsWithKills;
  if (fired.size() < planned.size()) {
    ++runsWithLoss;
    if (processes > 1) ++runsUnreached;
  }
  for (const auto& p : planned) {
    byVerb[p.verb].first++;
    byKind[p.kind][p.verb].first++;
    if (processes > 1 && std::find(fired.begin(), fired.end(), p) == fired.end()) unreachedShared[p.verb]++;
  }
  for (const auto& p : fired) {
    byVerb[p.verb].second++;
    byKind[p.kind][p.verb].second++;
  }
}

int FaultCoverage::planned() const {
  int n = 0;
  for (const auto& [v, pf] : byVerb) n += pf.first;
  return n;
}

int FaultCoverage::fired() const {
  int n = 0;
  for (const auto& [v, pf] : byVerb) n += pf.second;
  return n;
}

int FaultCoverage::unreached() const {
  int n = 0;
  for (const auto& [v, k] : unreachedShared) n += k;
  return n;
}

std::vector<std::string> FaultCoverage::neverFired() const {
  std::vector<std::string> out;
  for (const auto& [v, pf] : byVerb) {
    auto shared = unreachedShared.find(v);
    if (pf.first - (shared == unreachedShared.end() ? 0 : shared->second) > 0 && pf.second == 0) out.push_back(v);
  }
  return out;
}

nlohmann::json FaultCoverage::toJson() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [v, pf] : byVerb) j[v] = {{"planned", pf.first}, {"fired", pf.second}};
  return j;
}

nlohmann::json FaultCoverage::byKindJson() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [kind, verbs] : byKind)
    for (const auto& [v, pf] : verbs) j[kind][v] = {{"planned", pf.first}, {"fired", pf.second}};
  return j;
}

std::string FaultCoverage::text() const {
  std::string out;
  for (const auto& [kind, verbs] : byKind) {
    out += (out.empty() ? "" : "; ") + kind + ":";
    bool first = true;
    for (const auto& [v, pf] : verbs) {
      out += (first ? " " : ", ") + v + " " + std::to_string(pf.second) + "/" + std::to_string(pf.first);
      first = false;
    }
  }
  return out;
}

namespace {

const char* plural(int n) { return n == 1 ? "" : "s"; }

} // namespace

std::string interruptedNote(const CheckCounts& c) {
  return fmt::format("interrupted by {}: the {} run{} that finished before it {} counted, of {} asked for; a run still "
                     "going then is not (the clean-up stopped its servers and processes)", c.interrupted, c.runs,
                     plural(c.runs), c.runs == 1 ? "is" : "are", c.runsRequested);
}

CheckDecision decideCheck(const CheckCounts& c, const CheckFinding* cx, std::optional<Verdict> decided,
                          std::vector<std::string> notes) {
  CheckDecision d;
  d.notes = std::move(notes);
  if (!c.interrupted.empty()) { // what ran is not what was asked for: never a pass, never a fail of the target
    d.notes.insert(d.notes.begin(), interruptedNote(c));
    d.verdict = Verdict::Unknown;
    return d;
  }
  if (c.outOfTime)
    d.notes.push_back(fmt::format("the time budget ended the search after {} of {} runs", c.runs, c.runsRequested));
  const FaultCoverage& cov = c.coverage;
  if (cov.runsWithLoss > 0)
    d.notes.push_back(fmt::format("{} run{} had a fault that never fired (coverage loss, not a failure of the target)",
                                  cov.runsWithLoss, plural(cov.runsWithLoss)));
  if (cov.unreached() > 0)
    d.notes.push_back(fmt::format("{} of them ran several processes, and their {} fault{} {} at a process's k-th step "
                                  "of a verb which that process never reached (in such a run which process takes "
                                  "which step is decided as it runs: by the broker, the client, or the requests a "
                                  "replica is sent and whether they reach that step): counted as coverage loss only",
                                  cov.runsUnreached, cov.unreached(), plural(cov.unreached()),
                                  cov.unreached() == 1 ? "was" : "were"));
  if (decided) {
    d.verdict = *decided;
    return d;
  }
  if (cx) {
    d.verdict = cx->flaky ? Verdict::Flaky : Verdict::Fail;
    if (cx->flaky) {
      d.notes.push_back(fmt::format("the counterexample's verdict changed between runs ({}): the target is nondeterministic",
                                    fmt::join(cx->verdicts, ", ")));
      for (const auto& t : cx->tried)
        d.notes.push_back(fmt::format("its deterministic shape \"{}\" ({}) did not fail every time either: {}", t.what,
                                      t.summary, fmt::join(t.verdicts, ", ")));
      d.notes.push_back("nor did a smaller schedule its shrinking reached");
      return d;
    }
    const auto failed = std::count(cx->foundVerdicts.begin(), cx->foundVerdicts.end(), std::string("fail"));
    if (static_cast<size_t>(failed) < cx->foundVerdicts.size())
      d.notes.push_back(fmt::format("the schedule the search found failed in {} of its {} runs ({}); the one "
                                    "reported failed in every run", failed, cx->foundVerdicts.size(),
                                    fmt::join(cx->foundVerdicts, ", ")));
    if (cx->flakyCandidates > 0)
      d.notes.push_back(fmt::format("{} shrink candidate{} failed once and passed when run again: the target may be "
                                    "nondeterministic", cx->flakyCandidates, cx->flakyCandidates == 1 ? "" : "s"));
    return d;
  }
  std::vector<std::string> why;
  if (c.runs == 0) why.push_back("no schedule ran");
  if (c.errors > 0)
    why.push_back(fmt::format("{} run{} could not be judged (first: {})", c.errors, plural(c.errors), c.firstProblem));
  if (c.unknown > 0)
    why.push_back(fmt::format("{} run{} had an unknown result (first: {})", c.unknown, plural(c.unknown), c.firstProblem));
  if (c.runs > 0 && cov.fired() == 0)
    why.push_back(fmt::format("no fault fired in any run ({} planned)", cov.planned()));
  else if (const int reachable = cov.planned() - cov.unreached(); reachable > 0 && 2 * cov.fired() < reachable)
    // Below half, the schedules that ran are not the ones the search claims to have covered.
    why.push_back(fmt::format("only {} of {} planned faults fired (below half{}): the schedules that ran do not "
                              "stand for those generated", cov.fired(), cov.planned(),
                              cov.unreached() > 0 ? fmt::format(", leaving out {} unreached in runs of several processes",
                                                                cov.unreached()) : ""));
  for (const auto& v : cov.neverFired())
    why.push_back(fmt::format("the target never reached a {} step where a fault was asked for ({} planned, 0 fired)",
                              v, cov.byVerb.at(v).first));
  d.notes.insert(d.notes.end(), why.begin(), why.end());
  d.verdict = why.empty() ? Verdict::Pass : Verdict::Unknown;
  return d;
}

Verdict sweepVerdict(const SweepCounts& c) {
  if (c.interrupted) return c.failed ? Verdict::Fail : Verdict::Unknown;
  if (c.error) return Verdict::Error;
  if (c.failed) return Verdict::Fail;
  return (c.unknown || c.notFired || !c.traceUsable || c.noFaults) ? Verdict::Unknown : Verdict::Pass;
}

Verdict foldCellVerdict(Verdict target, Verdict cell) {
  if (cell == Verdict::Fail) return Verdict::Fail;
  if (cell == Verdict::Unknown && target == Verdict::Pass) return Verdict::Unknown;
  return target;
}

Verdict compareVerdict(bool anyTargetFails, bool unknownCells) {
  return anyTargetFails ? Verdict::Fail : unknownCells ? Verdict::Unknown : Verdict::Pass;
}

} // namespace idem
