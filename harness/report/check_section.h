#pragma once
/// report.json's "check" section as a typed value (docs/report.md, "check"): check builds it, the merge
/// of check shards reads each shard's back and writes the merged one through the same type, and the page
/// reads its runs from it. Members a report may lack read as their defaults (a report idemproof writes has
/// them all); a member of the wrong type, or a counterexample without its found run, does not read.
#include "report/check_verdict.h"
#include "report/shard_section.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace idem {

/// The faults planned and fired of one verb.
struct FaultCount {
  int planned = 0, fired = 0;
  bool operator==(const FaultCount&) const = default;
};

/// One of the first runs in which a planned fault never fired.
struct CoverageLossExample {
  int64_t run = 0;      ///< 1-based
  std::string schedule; ///< its summary
  std::vector<std::string> notFired;
  bool operator==(const CoverageLossExample&) const = default;
};

struct CoverageSummary {
  int planned = 0, fired = 0, runsWithKills = 0, runsWithLoss = 0;
  std::vector<std::string> neverFired;
  std::vector<CoverageLossExample> lossExamples; ///< the first 5, in run order
  bool operator==(const CoverageSummary&) const = default;
};

/// The run the search found failing, as generated.
struct FoundRun {
  int64_t run = 0;         ///< 1-based
  nlohmann::json schedule; ///< as plan/schedule.h writes it
  std::string summary;
  std::vector<std::string> verdicts; ///< the search's run, then its confirmation replays
  bool operator==(const FoundRun&) const = default;
};

struct CounterexampleSection {
  nlohmann::json schedule; ///< shrunk, as plan/schedule.h writes it
  std::string summary;
  std::vector<std::string> verdicts;
  std::string file, replayCommand;
  int shrinkSteps = 0;
  int64_t shrinkRuns = 0;
  std::vector<std::string> replays;
  bool flaky = false;
  int64_t flakyCandidates = 0;
  std::optional<std::string> reduced; ///< the deterministic shape it was reduced to, null when none
  std::vector<TriedShape> tried;
  FoundRun found;

  /// What check's verdict reads of it (report/check_verdict.h).
  CheckFinding finding() const;
  bool operator==(const CounterexampleSection&) const = default;
};

struct CheckSection {
  int runs = 0, runsRequested = 0;
  bool outOfTime = false;
  std::optional<std::string> interrupted; ///< the signal, null when none
  uint64_t seed = 0;
  bool seedGiven = false;
  int maxEvents = 0, replays = 0;
  std::pair<int, int> consumers{1, 1}; ///< --consumers MIN..MAX, [MIN, MAX]
  int passed = 0, failed = 0, unknown = 0, errors = 0, flaky = 0;
  std::map<std::string, FaultCount> coverage;                              ///< verb ->
  std::map<std::string, std::map<std::string, FaultCount>> coverageByKind; ///< kind -> verb ->
  CoverageSummary coverageSummary;
  nlohmann::json killModel; ///< as search/kill_model.h writes it
  std::optional<CounterexampleSection> counterexample;
  std::vector<std::string> faults, notes;
  std::vector<RunSummaryEntry> runSummaries; ///< the page's share in memory; report.json lists every run

  /// The counts of `c` (runs, runs_requested, passed ... errors, out_of_time, interrupted) and its coverage.
  void setCounts(const CheckCounts& c);
  /// The coverage members (coverage, coverage_by_kind, coverage_summary but its examples) of `c`.
  void setCoverage(const FaultCoverage& c);
  /// The fault coverage these members count.
  FaultCoverage faultCoverage() const;
  /// What check's verdict is decided from, as far as this section holds it.
  CheckCounts counts() const;
  bool operator==(const CheckSection&) const = default;
};

void to_json(nlohmann::json& j, const FaultCount& c);
void from_json(const nlohmann::json& j, FaultCount& c);
void to_json(nlohmann::json& j, const CoverageLossExample& e);
void from_json(const nlohmann::json& j, CoverageLossExample& e);
void to_json(nlohmann::json& j, const TriedShape& t);
void from_json(const nlohmann::json& j, TriedShape& t);
void to_json(nlohmann::json& j, const CounterexampleSection& c);
/// Throws nlohmann::json::exception on a mistyped member or a missing found run.
void from_json(const nlohmann::json& j, CounterexampleSection& c);
void to_json(nlohmann::json& j, const CheckSection& s);
/// Throws nlohmann::json::exception on a mistyped member, std::invalid_argument on a verdict that is none.
void from_json(const nlohmann::json& j, CheckSection& s);

} // namespace idem
