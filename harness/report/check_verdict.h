#pragma once
/// The verdict rules of check, sweep and compare, each a pure function of the command's typed counts: the
/// unsharded command (driver/) and the merge of its shards (report/merge*.cc) decide by the same function,
/// so that the two reports cannot say different things of the same runs.
#include "core/verdict.h"
#include "plan/fault.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace idem {

/// Planned and fired faults per verb (and per kind and verb), summed over the runs of a check.
struct FaultCoverage {
  std::map<std::string, std::pair<int, int>> byVerb; ///< verb -> (planned, fired), every kind of fault
  std::map<std::string, std::map<std::string, std::pair<int, int>>> byKind; ///< kind -> verb -> (planned, fired)
  /// verb -> planned faults that did not fire in a run of several processes (consumers or replicas): which
  /// process reaches its k-th step of a verb is the broker's (or the client's) choice in such a run, so an
  /// unreached point there says nothing of what the target does. Counted in byVerb too, as coverage loss.
  std::map<std::string, int> unreachedShared;
  int runsWithKills = 0;
  int runsWithLoss = 0;  ///< runs in which some planned fault never fired
  int runsUnreached = 0; ///< of those, runs of several processes (their unfired faults: unreachedShared)
  /// One run of `processes` consumers (or HTTP replicas): the faults it planned and those of them that fired.
  void add(const std::vector<Fault>& planned, const std::vector<Fault>& fired, int processes = 1);
  int planned() const;
  int fired() const;
  /// Faults planned in runs of several processes that did not fire.
  int unreached() const;
  /// Verbs asked for whose points never fired in any run, leaving out points unreached in runs of several
  /// processes: a verb planned only there and never fired is not counted.
  std::vector<std::string> neverFired() const;
  /// {"VERB": {"planned": p, "fired": f}, ...}
  nlohmann::json toJson() const;
  /// {"KIND": {"VERB": {"planned": p, "fired": f}, ...}, ...}
  nlohmann::json byKindJson() const;
  /// "kill: COMMIT 2/2, XACK 1/1; drop: UPDATE 0/1"
  std::string text() const;
};

/// What a check's verdict is decided from: the runs counted (in index order, up to the first failure),
/// their verdicts and fault coverage, and why the search ended early.
struct CheckCounts {
  int runsRequested = 0, runs = 0;
  int passed = 0, failed = 0, unknown = 0, errors = 0;
  std::string firstProblem; ///< "run N, SCHEDULE: reason" of the first unknown or error run
  FaultCoverage coverage;
  bool outOfTime = false;   ///< the time budget ended the search
  /// The signal that interrupted the check ("SIGINT"), "" when none: the counts are then of the runs that
  /// finished before it, and the verdict is unknown.
  std::string interrupted;
};

/// A schedule replayed to decide between fail and flaky, with the verdicts of its runs.
struct TriedShape {
  std::string what;    ///< "one consumer", "no holds", "bursts sent one after another", "shrunk"
  std::string summary; ///< the schedule's summary
  std::vector<std::string> verdicts;
  bool operator==(const TriedShape&) const = default;
};

/// What a check's verdict reads of its counterexample.
struct CheckFinding {
  bool flaky = false;
  std::vector<std::string> verdicts; ///< every run of the shrunk schedule seen, in order
  std::vector<TriedShape> tried;
  size_t flakyCandidates = 0;        ///< shrink candidates that failed once and passed when run again
  /// Every run of the schedule the search found: its run in the search, then its confirmation replays.
  std::vector<std::string> foundVerdicts;
};

struct CheckDecision {
  Verdict verdict = Verdict::Unknown;
  std::vector<std::string> notes;
};

/// The note of an interrupted check: which signal, how many runs count.
std::string interruptedNote(const CheckCounts& c);

/// The verdict of a check and the notes that explain it, `notes` (what was noted before: the trace run's
/// problems) kept. An interrupted check is unknown; a verdict already `decided` (error: the fault-free
/// trace could not be judged) stays; a counterexample fails, or is flaky when its runs disagree; else
/// the check passes only when every run passed and the faults planned fired (none fired at all, fewer than
/// half, or a verb never reached is unknown; a point unreached in a run of several processes counts in
/// neither rule, only as coverage loss).
CheckDecision decideCheck(const CheckCounts& c, const CheckFinding* cx, std::optional<Verdict> decided,
                          std::vector<std::string> notes = {});

/// What a sweep's verdict is decided from.
struct SweepCounts {
  int failed = 0;           ///< failing points, and the fault-free run when it fails
  int unknown = 0;          ///< points neither passing nor failing
  int notFired = 0;         ///< points whose fault never fired
  bool traceUsable = true;  ///< the fault-free run passed or failed: its trace gave the points
  bool noFaults = false;    ///< the trace held no point for the faults asked for
  bool error = false;       ///< the fault-free run could not be run
  bool interrupted = false; ///< a signal cut the sweep short
};

/// A failing point (or fault-free run) fails the sweep; a point unknown or not fired, an unusable trace or
/// no fault at all makes it unknown; an error of the fault-free run is an error, unless interrupted (then
/// never a pass: fail or unknown).
Verdict sweepVerdict(const SweepCounts& c);

/// A compare cell's verdict folded into its target's: a fail beats an unknown beats a pass (n/a counts
/// for nothing).
Verdict foldCellVerdict(Verdict target, Verdict cell);
/// The verdict of a compare: fail when a target fails, else unknown when a cell holds an unknown schedule.
Verdict compareVerdict(bool anyTargetFails, bool unknownCells);

} // namespace idem
