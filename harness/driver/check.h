#pragma once
/// Private to check.cc, check_pool.cc, check_report.cc and replay.cc: the worker pool they execute
/// schedules on, and what a check found, as the terminal and report.json show it.
#include "driver/commands.h"
#include "report/report.h"
#include "search/kill_model.h"
#include "search/outcome.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace idem {

/// One workspace per worker, kept for a whole command, so a schedule costs only its reset (DELETE,
/// FLUSHDB) and never a new database.
class WorkerPool {
public:
  WorkerPool(Session& session, const Target& target, int workers);
  int size() const { return static_cast<int>(spaces_.size()); }
  /// Executes and judges `s` on worker `w` (one call at a time per worker).
  Judged judge(int w, const Schedule& s, bool keepLogs = false);
  /// Executes the schedules on all workers; results in input order.
  std::vector<Judged> judgeAll(const std::vector<Schedule>& schedules, bool keepLogs = false);
  /// The same, reduced to outcomes (search/outcome.h).
  std::vector<Outcome> outcomes(const std::vector<Schedule>& schedules);

private:
  Session& session_;
  std::vector<std::unique_ptr<Workspace>> spaces_;
};

/// The outcome of a judged run.
Outcome outcomeOf(const Judged& j);
/// A RunRecord of a judged run, its logs written under <report>/logs/<id>/.
RunRecord recordOf(Session& session, const Judged& j, const std::string& id);

/// A counterexample: the first failing case, shrunk, replayed, saved.
struct Counterexample {
  size_t index = 0;                       ///< the failing case
  Schedule found;                         ///< as generated
  std::vector<std::string> foundVerdicts; ///< every run of it: the search's, then its confirmation replays
  Schedule schedule;                      ///< shrunk
  int shrinkSteps = 0;
  size_t shrinkRuns = 0;
  size_t flakyCandidates = 0;
  std::vector<std::string> verdicts;      ///< every run of `schedule` seen, in order (search or shrink, replays)
  std::vector<std::string> replays;       ///< its last replays
  std::string file;                       ///< counterexample.json
  std::string replayCommand;
  std::optional<Judged> judged;           ///< one failing replay (history, logs)
  bool flaky = false;
};

struct CheckSummary {
  std::string target, targetDir, scenario;
  uint64_t seed = 0;
  bool seedGiven = false;
  int runsRequested = 0, runs = 0, maxEvents = 0, workers = 0, replays = 0;
  int passed = 0, failed = 0, unknown = 0, errors = 0;
  bool outOfTime = false;
  std::string firstProblem;     ///< the first unknown / error reason seen
  Coverage coverage;
  nlohmann::json coverageLoss = nlohmann::json::array(); ///< the first runs with a point that never fired
  KillModel model;
  std::optional<Counterexample> cx;
  std::optional<Judged> trace;  ///< a trace run that could not be judged (its logs go to the report)
  std::string verdict;          ///< pass | fail | flaky | unknown | error
  std::vector<std::string> notes;
  int64_t searchMs = 0, shrinkMs = 0, totalMs = 0;
};

/// The verdict of a check and the notes that explain an unknown one (the fault-coverage rules).
void decideVerdict(CheckSummary& s);

/// A schedule in a few readable lines, each starting with `indent`.
std::string describeSchedule(const Schedule& s, const Scenario& sc, const std::string& indent);

/// Prints the result of a check and writes report.json; returns the report path.
std::string reportCheck(Session& session, CheckSummary& s);

/// "fail" / "fail, pass, fail" of a list of verdicts.
std::string joinWords(const std::vector<std::string>& words);

} // namespace idem
