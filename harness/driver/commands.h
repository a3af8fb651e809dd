#pragma once
/// The judging commands. Each returns the process exit status: 0 every invariant holds, 1 one is
/// violated, 2 the result cannot be judged (error, unknown, a kill point that never fired).
#include "driver/session.h"

#include <set>
#include <string>
#include <vector>

namespace idem {

struct RunArgs {
  int events = 0;                   ///< 0: the scenario's default schedule
  std::vector<std::string> crashes; ///< --crash after:COMMIT#3 (repeatable)
  std::string restart = "new-name";
  int consumers = 1;                ///< --consumers: processes that run at once
  int replicas = 1;                 ///< --replicas: HTTP server replicas that run at once (s1..sN)
};

int runCommand(const CommonArgs& common, const RunArgs& args);

/// Flags of `idemproof sweep` (besides the common ones).
struct SweepArgs {
  int events = 0;          ///< --events N: a generated schedule of N events (with --seed); 0: the default one
  bool exhaustive = false; ///< --exhaustive: every point of the trace, however many
  int reduceAbove = -1;    ///< --reduce-above N: the reduced selection above N points; -1: kSweepReduceAbove
  std::string traceFrom;   ///< --trace-from REPORT: the faults placed on that report's fault-free run (trace_from.h)
};
int sweepCommand(const CommonArgs& common, const SweepArgs& args);
/// sweep --interleave (interleave.cc): the default schedule with two consumers, every hold point of c1
/// against every step c2 makes while c1 is held; exit as sweep.
int interleaveCommand(const CommonArgs& common);

/// A schedule of `events` events drawn from the scenario's generators with `seed` (keys, ints, picks),
/// sent in order, followed by a retry of event 2 (when there are two or more).
Schedule generatedSchedule(const Scenario& sc, int events, uint64_t seed);

/// The scenario's default schedule, for `target`, with values decodable for `kills` kill points
/// (scenario/decodable.h) unless --scenario-values.
Schedule defaultScheduleFor(const Session& session, const std::string& target, int kills);

/// `s` as one word of a POSIX shell: as is when it needs no quoting, else in single quotes.
std::string shellQuote(const std::string& s);
/// The timing flags of `run` that differ from their defaults (" --claim-idle-ms 2000 --stall-timeout 20000ms"),
/// for a replay command: a schedule replayed at other timings may not fail alike (NATS's AckWait is
/// --claim-idle-ms).
std::string timingFlags(const RunOptions& run);

/// The line printed on stderr for a run that could not be judged: its error and where the consumers' output
/// was kept (`logs`: label -> path relative to the report dir, as Session::writeLogs returns).
std::string errorLine(const std::string& error, const std::map<std::string, std::string>& logs,
                      const std::filesystem::path& reportDir);

/// Prints a judged run's violations and unknown reasons for the terminal, each line starting with `indent`.
void printResults(const Judged& j, const std::string& indent);

/// One line of a violation for the terminal: "duplicate  balance w1: expected 25000, observed 30000: event 2 applied twice".
std::string violationLine(const Violation& v);

/// The line under a violation of a failing check that names its anti-pattern and the fix, as the page does:
/// "pattern: effect without dedup — record the event in …"; "pattern: NAME (its fix above)" when
/// `toldBefore` (the same anti-pattern was printed with its fix for an earlier violation); "pattern: no
/// known pattern" when no classifier recognised it.
std::string patternLine(const Violation& v, bool toldBefore = false);

/// The terminal text of a run's results: each violation's line (violationLine), under each violation of a
/// failing check its anti-pattern (patternLine), and with `unknownReasons` why a check is unknown; each
/// line starts with `indent`.
std::string resultsText(const std::vector<CheckResult>& results, const std::string& indent, bool unknownReasons = true);

} // namespace idem

namespace idem {

/// Flags of `idemproof compare`.
struct CompareArgs {
  int runs = 3;                 ///< schedules per generated class (retries, late retries, reordered)
  int perClass = 0;             ///< kill points run per kill class and target; 0: every one
  int events = 6;               ///< events of a generated schedule
  bool failOnViolation = false; ///< exit 1 when a target fails a class (default: 0, compare only compares)
};

/// idemproof compare: the same classes of schedules against every target; exit 0 unless a schedule
/// cannot be judged (2), or 1 with --fail-on-violation when a target fails a class.
int compareCommand(const CommonArgs& common, const CompareArgs& args);

/// Flags of `idemproof demo` (the targets and scenarios are the built-in ones). By default each reference
/// target meets each fault family, each gap between two of its steps and each client behaviour once: one
/// schedule per class, and no class whose family another one shows (kFamilyRepeats). `--full` is the
/// complete matrix: every class, two schedules of each.
struct DemoArgs {
  int runs = 1;      ///< schedules per generated class
  int perClass = 1;  ///< faults per kill or fault class and target
  bool full = false; ///< every class (kFamilyRepeats too)
  static constexpr int kFullRuns = 2, kFullPerClass = 2; ///< demo --full
  /// The classes only --full runs: drop before a step (drop after it, the ambiguous commit, shows drops),
  /// a delayed reply (a delayed request shows delays), a broker's restart (a PostgreSQL one shows restarts),
  /// late retries (retries), and the race classes with a kill added (races, and kills, each alone).
  inline static const std::set<std::string> kFamilyRepeats{
      "drop:before",  "delay:after", "restart:valkey",  "restart:kafka", "restart:nats",
      "restart:rabbitmq", "late-retry", "race:claim+kill", "race:dup+kill"};
};

/// idemproof demo: compares the reference targets on the built-in scenarios and writes one report; exit
/// 0 when every reference target behaves as documented, 1 when one does not, 2 when a schedule cannot be
/// judged.
int demoCommand(const CommonArgs& common, const DemoArgs& args);

} // namespace idem

namespace idem {

/// idemproof check (check.cc): schedules generated from the pure model (search/model.h) with a seed, run
/// on every worker, the first failure shrunk, confirmed by replays and saved as a schedule file.
/// Exit 0 every schedule passed with kill points that fired, 1 a counterexample that fails on every
/// replay, 2 flaky (a verdict that changed between replays), unknown (no kill fired, a verb never
/// reached, runs that could not be judged) or error.
struct CheckArgs {
  int runs = 100;
  int maxEvents = 6;
  int minConsumers = 1, maxConsumers = 2; ///< --consumers A-B
  /// --replicas A-B: HTTP server replicas per schedule (drawn in the range, shrunk toward A); default 1-3.
  int minReplicas = 1, maxReplicas = kMaxReplicas;
  std::chrono::milliseconds timeBudget{0}; ///< 0: no budget
  int replays = 3;
  bool noClassSweep = false; ///< --no-class-sweep: random schedules from run 1 (search/classes.h)
  bool scenarioGiven = true; ///< --scenario was on the command line (replay commands repeat it when a file)
};
int checkCommand(const CommonArgs& common, const CheckArgs& args);

/// idemproof replay FILE (replay.cc): runs a schedule file `replays` times and judges it like run.
/// The target and scenario come from the file unless given. Exit as run; 2 when replays disagree (flaky).
struct ReplayArgs {
  std::string file;
  int replays = 1;
  bool scenarioGiven = false;
};
int replayCommand(const CommonArgs& common, const ReplayArgs& args);

} // namespace idem

namespace idem {

/// idemproof merge DIR... (merge.cc): the reports of the shards of one check (--shard I/N) joined into
/// the report the unsharded check writes (report/merge.h). Exit as that check; 2 with a one-line reason
/// when the shards do not belong together.
struct MergeArgs {
  std::vector<std::string> dirs; ///< shard report folders (or their report.json)
  std::string reportDir;         ///< default reports/latest
  std::string junit;
  bool reportDirGiven = false;
};
int mergeCommand(const MergeArgs& args);

} // namespace idem
