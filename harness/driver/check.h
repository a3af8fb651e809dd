#pragma once
/// Private to check.cc, check_report.cc and replay.cc: what a check found, as the terminal and report.json
/// show it.
#include "driver/commands.h"
#include "driver/pool.h"
#include "driver/run_summaries.h"
#include "report/check_verdict.h"
#include "report/html.h"
#include "report/report.h"
#include "search/kill_model.h"
#include "search/case_result.h"
#include "search/model.h"
#include "search/classes.h"
#include "search/search.h"

#include <functional>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace idem {

/// The result of a judged run, as the search sees it.
CaseResult caseResultOf(const Judged& j);
/// The schedules on the pool's workers (target 0), reduced to their results.
std::vector<CaseResult> caseResults(WorkerPool& pool, const std::vector<Schedule>& schedules);

/// A counterexample: the first failing case, shrunk, replayed, saved (with what its verdict reads of it:
/// flaky, the verdicts of its runs, the shapes tried, the flaky shrink candidates).
struct Counterexample : CheckFinding {
  size_t index = 0;                       ///< the failing case
  Schedule found;                         ///< as generated
  Schedule schedule;                      ///< shrunk
  int shrinkSteps = 0;
  size_t shrinkRuns = 0;
  std::vector<std::string> replays;       ///< its last replays
  std::string file;                       ///< counterexample.json
  std::string replayCommand;
  std::optional<Judged> judged;           ///< one failing replay (history, logs)
  /// The deterministic shape (search/reductions.h) it was reduced to before shrinking ("" : none failed
  /// every time, or none applied).
  std::string reduced;
  /// The violations of the deterministic shape taken when it failed every time with others than the run
  /// found ("" when it failed with the same ones, or none was taken).
  std::string otherKinds;
  using Tried = TriedShape;
};

/// A check: its counts (report/check_verdict.h, what the verdict is decided from) and all it reports.
struct CheckSummary : CheckCounts {
  std::string target, targetDir, scenario;
  uint64_t seed = 0;
  bool seedGiven = false;
  int maxEvents = 0, workers = 0, replays = 0;
  int minConsumers = 1, maxConsumers = 1;
  nlohmann::json coverageLoss = nlohmann::json::array(); ///< the first runs with a point that never fired
  KillModel model;
  /// The slow-work points of the fault-free trace (compare's slow:ack class): the class shapes plan them.
  std::vector<ModelParams::SlowWork> slowWork;
  std::optional<Counterexample> cx;
  bool concurrentWork = false; ///< its trace showed a process working on two connections at once
  std::optional<Judged> trace;  ///< a trace run that could not be judged (its logs go to the report)
  /// The unknown (or error) run of the search with the lowest index, and that index: in the report, so
  /// that an unknown can be read and replayed, not only counted.
  std::optional<Judged> firstUnknownRun;
  size_t firstUnknownIndex = 0;
  /// The failing run of the search the counterexample starts from (the one with the lowest index): in the
  /// report when no replay of the counterexample failed (a flaky verdict), so that the violation seen is
  /// kept with its history, not only counted.
  std::optional<Judged> firstFailingRun;
  size_t firstFailingIndex = 0;
  std::optional<Shard> shard;     ///< --shard: the search ran this slice of the indices
  RunSummaries runSummaries{kPageRuns}; ///< every counted run of the search, in index order (spooled)
  std::vector<std::string> faults; ///< the fault kinds drawn
  std::optional<Verdict> verdict; ///< pass | fail | flaky | unknown | error (once decided)
  std::vector<std::string> notes;
  int64_t searchMs = 0, shrinkMs = 0, totalMs = 0;
};

/// The two fault-free trace runs check learns its kill model from (into sum.model): the scenario's default
/// schedule with every entry in phase 1 (a later phase adds reads that depend on phases, not on events) and
/// its first event alone, at once on two workers (a SELECT step is not counted). Returns false (and a
/// note) when one cannot be judged. (Shared with bench/first_bug_bench.cc.)
bool learnModel(WorkerPool& pool, const Scenario& sc, const Target& t, CheckSummary& sum);
/// A case's shape made a schedule (scenario set, faults placed).
using Materialize = std::function<Schedule(const Shape&)>;
/// The first failure of the search (`first`, its result), replayed; then its deterministic shapes (search/reductions.h), each
/// replayed as often: the first that fails in every replay takes its place, so that a bug that is there
/// without the concurrency is reported without it, and a failure whose replays disagree is flaky only when
/// none of them fails every time. The schedule kept is shrunk, even one whose replays disagreed (a
/// candidate must fail in its run and its confirmations) and the result replayed again; should that replay
/// disagree, the candidates accepted before it are replayed in turn, back to the start, so a counterexample
/// reported as a fail is always one that failed every time, and one that never did is flaky.
/// When none fails every time with its violation, the first that failed every time with another one takes its
/// place (Counterexample::otherKinds). (check_counterexample.cc)
Counterexample counterexampleOf(WorkerPool& pool, const Cases& cases, const Materialize& materializeShape,
                                const SearchResult& res, const CaseResult& first, const CheckArgs& args,
                                const ModelParams& params, bool concurrentWork);
/// The fault kinds check draws when --faults is not given.
std::vector<std::string> defaultCheckFaults(const CommonArgs& common, const CheckArgs& args);
/// The model check generates from, for `common.faults` (resolved) and `args`.
ModelParams checkParams(const CommonArgs& common, const CheckArgs& args);

/// The verdict of a check and the notes that explain it (report/check_verdict.h, decideCheck), into `s`.
void decideVerdict(CheckSummary& s);

/// A schedule in a few readable lines, each starting with `indent`.
std::string describeSchedule(const Schedule& s, const Scenario& sc, const std::string& indent);

/// Prints the result of a check and writes report.json; returns the report path.
std::string reportCheck(Session& session, CheckSummary& s);

/// "fail" / "fail, pass, fail" of a list of verdicts.
std::string joinWords(const std::vector<std::string>& words);
/// "lost, stuck" of a set of violation kinds.
std::string kindsText(const std::set<std::string>& kinds);

} // namespace idem
