#pragma once
/// What one executed schedule means to the search: pass, fail (with the kinds of its violations),
/// unknown or error, and which of its kill points fired.
///
/// The rule for kill points that never fired (the faults checker makes such a run Unknown): in a
/// generated schedule it is coverage loss, counted per verb and reported, not a failure of the target.
/// The run still fails when any other checker finds a violation (Invalid beats it), and it is unknown
/// when any other checker is Unknown, so neither a false "fail" nor a hidden failure comes of it.
#include "checkers/checkers.h"
#include "history/history.h"
#include "plan/schedule.h"

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

namespace idem {


struct CaseResult {
  Verdict verdict = Verdict::Unknown; ///< pass | fail | unknown | error
  std::set<std::string> kinds;   ///< violation kinds (fail)
  std::string reason;            ///< why unknown / error
  std::vector<Fault> planned;
  std::vector<Fault> fired;      ///< planned faults with a "fault" op
  int processes = 1;             ///< consumers (or HTTP replicas) the schedule ran at once
  bool coverageLoss() const { return fired.size() < planned.size(); }
};

/// Classifies one judged execution of `s` (its history, the checkers' results, an execution error).
CaseResult classify(const Schedule& s, const std::vector<Op>& history, const std::vector<CheckResult>& results,
                 const std::string& error);

/// One run of a search as the report lists it, kept for every run (check spools them to a temporary
/// file: driver/run_summaries.h) while the run's history is dropped
/// (only a counterexample's and the first unknown run's are kept): its 1-based index, verdict, faults
/// planned (their text forms, space-separated) and which of them fired (a bit per planned fault), the
/// kinds of its violations and why it is unknown. About 150 bytes as JSON.
struct RunSummary {
  uint32_t run = 0;
  Verdict verdict = Verdict::Unknown;
  uint64_t firedMask = 0;  ///< bit p: planned fault p fired (a generated schedule has at most 4; past the
                           ///< 64th, faults share the last bit)
  std::string planned;     ///< "after:COMMIT#3 drop:before:XACK#1"
  uint8_t processes = 1;   ///< consumers (or HTTP replicas) at once (FaultCoverage::add)
  std::string kinds;       ///< "duplicate lost"
  std::string reason;

  /// The summary of case `index` (0-based) with outcome `o`.
  static RunSummary of(size_t index, const CaseResult& o);
  std::vector<std::string> plannedFaults() const;
  /// The planned faults that fired, in planned order.
  std::vector<std::string> firedFaults() const;
  /// A planned fault never fired (coverage loss).
  bool lostFault() const { return firedFaults().size() < plannedFaults().size(); }
  /// {"run", "verdict", "planned": [...], "fired": [...], "processes"?, "kinds"?: [...], "reason"?} (report.json's
  /// check.run_summaries and shard.runs).
  nlohmann::json toJson() const;
};

/// Whether `o` is the same failure as one with `kinds`: a fail sharing at least one violation kind.
bool sameFailure(const CaseResult& o, const std::set<std::string>& kinds);
/// Whether every one of `runs` (one or more) failed alike (the same failure as the first's kinds) and none
/// as one with `kinds`: a schedule that fails every time, with another violation.
bool failedAlikeOtherwise(const std::vector<CaseResult>& runs, const std::set<std::string>& kinds);


} // namespace idem
