#pragma once
/// The search and the shrinker of `check`, independent of how a schedule is executed: they take
/// callbacks that execute schedules, so they can be tested with a pure fake target.
///
/// Parallelism: RapidCheck's own driver runs one case at a time; executing a schedule costs ~100-250 ms,
/// so cases run on all workers instead. Case i is generated from (seed, i) alone (generateCase); workers
/// take cases in index order, and once case f fails no case after f is started while every case before
/// f still runs to its end. The failure reported is therefore the lowest failing index, the same one a
/// sequential run finds: the same seed gives the same schedules and the same first failure, with any
/// number of workers. Shrinking evaluates the candidates of one step on all workers at once and takes
/// the first one in RapidCheck's order that fails, again what a sequential shrinker would take.
#include "search/model.h"
#include "search/case_result.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <vector>

namespace idem {

struct SearchResult {
  size_t ran = 0;                      ///< cases 0..ran-1 counted: up to the first failure, else every case run
  std::optional<size_t> firstFailure;  ///< lowest failing index
  std::optional<CaseResult> failure;   ///< its outcome
  bool outOfTime = false;              ///< the budget ended the search before n cases
};

/// Called for each counted case in index order, one call at a time.
using OnOutcome = std::function<void(size_t i, const CaseResult& o)>;

/// Runs cases 0..n-1 through `eval` on `workers` threads until the first failure (see above) or until
/// `expired()` says the time budget is spent (checked before a case starts). The counted cases are a
/// prefix 0..ran-1: up to and including the first failure, else every case run. Their outcomes are not
/// kept: each goes to `onOutcome` in index order (an outcome that finished before a lower case waits for
/// it, so what is held at once is about one outcome per worker), and cases past the first failure that
/// were already running are dropped. Memory is constant in n.
SearchResult searchCases(size_t n, int workers, const std::function<CaseResult(int worker, size_t i)>& eval,
                         const std::function<bool()>& expired = {}, const OnOutcome& onOutcome = {});

/// Executes schedules on the workers; results in input order.
using BatchEval = std::function<std::vector<CaseResult>(const std::vector<Schedule>&)>;

struct ShrinkLimits {
  int workers = 1;
  size_t maxRuns = 500;  ///< executions spent shrinking, confirmations included
  size_t maxFlaky = 5;   ///< candidates that failed and then passed: past this, the target is too
                         ///< nondeterministic for shrinking to mean anything, and it stops
  /// Runs that confirm a concurrent candidate (search/reductions.h concurrent) after its batch: check's
  /// --replays, the count the reported counterexample must fail in.
  int replays = 3;
  /// The target works on several deliveries at once in one process (checkers/checkers.h concurrentWork): every
  /// candidate is confirmed as a concurrent one, its order left to timing whatever its consumers.
  bool concurrentWork = false;
  /// Runs of each candidate when the start's own replays disagreed (0: they did not). A candidate is then
  /// taken when one of them is the same failure, so the descent goes on through candidates that fail only
  /// sometimes, and `accepted` holds such candidates: the caller replays them for one that fails every
  /// time (a nondeterministic consumer can still have a smaller schedule that does).
  int flakyStartTries = 0;
  /// For a start whose replays disagreed: two runs a candidate (enough to go on through candidates that
  /// fail half the time), and at most 60 runs in all, as a consumer whose every schedule fails only
  /// sometimes would spend the whole budget to end flaky all the same.
  void flakyStart() {
    flakyStartTries = 2;
    maxRuns = std::min<size_t>(maxRuns, 60);
  }
  /// Told after every batch of candidates: the runs spent so far, the steps accepted and the schedule
  /// kept (check's progress line while it shrinks).
  std::function<void(size_t runs, int steps, const Schedule& kept)> onBatch;
  /// Asked before every batch: true ends the shrink where it is (a signal: every run after it is spoiled).
  std::function<bool()> stop;
};

struct ShrinkResult {
  rc::Shrinkable<Shape> shape;
  Schedule schedule;
  CaseResult outcome;
  int steps = 0;            ///< accepted shrinks that changed the schedule
  size_t runs = 0;          ///< executions spent
  size_t flakyCandidates = 0; ///< candidates that failed once and passed their confirmation
  std::string stopped;      ///< why it stopped before a local minimum ("" when it reached one)
  std::vector<Schedule> accepted; ///< the schedules it accepted, in order: `schedule` is the last
  /// For each of `accepted`: whether every run of it failed (false only under limits.flakyStartTries).
  std::vector<bool> failedEveryRun;
};

/// `s` without the faults that did not fire in the run whose outcome is `outcome`.
Schedule withoutUnfired(const Schedule& s, const CaseResult& outcome);

/// Shrinks a failing shape greedily along RapidCheck's shrink tree. A candidate is accepted when it is
/// the same failure (sameFailure with the original's kinds) in its batch and in every confirmation run
/// after it: one for a sequential candidate, limits.replays (run at once) for a concurrent one, whose
/// order is left to timing. So a flaky candidate is never taken, and the result is the last candidate
/// that failed every time, never a smaller one that did not (but see limits.flakyStartTries). A candidate
/// that materializes to the current schedule is taken without running; one already tried is not run again.
/// At the local minimum, one last candidate: the schedule kept without the faults that did not fire in
/// its run (withoutUnfired), taken by the same rule; then `shape` is the minimum's, which still has them.
ShrinkResult shrinkFailure(const rc::Shrinkable<Shape>& start, const CaseResult& startOutcome,
                           const std::function<Schedule(const Shape&)>& materialize, const BatchEval& eval,
                           const ShrinkLimits& limits);

} // namespace idem
