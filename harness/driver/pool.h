#pragma once
/// The one worker pool every command runs its schedules on: one workspace per worker and target, made on
/// first use and kept for the whole command, so a schedule costs only its reset (DELETE, FLUSHDB), never a
/// new database. Jobs go to the workers in index order; results come back in input order.
#include "driver/session.h"

#include <functional>
#include <memory>
#include <vector>

namespace idem {

/// Runs of one schedule, at most, until it reaches the step its fault is at (againUntilReached): a sweep's
/// point, an interleaving's hold. One that reached it in none counts as never fired.
inline constexpr int kRunsToReach = 3;

class WorkerPool {
public:
  /// `workers` <= 0: the session's.
  explicit WorkerPool(Session& session, int workers = 0);
  ~WorkerPool();
  int size() const { return static_cast<int>(spaces_.size()); }

  /// Executes and judges `s` against target `t` (an index into the session's targets) on worker `w`
  /// (one call at a time per worker). Once a signal came (Cleanup) it runs nothing, and no workspace is
  /// made: unknown, its error saying it was not run.
  Judged judge(int w, size_t t, const Schedule& s, bool keepLogs = false);

  struct Job {
    size_t target = 0;
    Schedule schedule;
  };
  /// The jobs on every worker; `done(i, judged)` is called (serialised) as each finishes.
  std::vector<Judged> judgeAll(const std::vector<Job>& jobs, bool keepLogs = false,
                               const std::function<void(size_t, const Judged&)>& done = {});
  /// The schedules against target 0.
  std::vector<Judged> judgeAll(const std::vector<Schedule>& schedules, bool keepLogs = false,
                               const std::function<void(size_t, const Judged&)>& done = {});

  /// Runs the schedule of each `judged[i]` that did not reach what it was for (`reached` false) and did
  /// not fail (a failure stands) again, up to `runs` runs in all: a step one run did not reach, as the
  /// size of a batch or an offset commit on a timer decides, is often reached when it runs again. A later
  /// run replaces the earlier one. `done(i, judged)` as in judgeAll, `i` indexing `judged`. Returns how
  /// many times each ran.
  std::vector<int> againUntilReached(std::vector<Judged>& judged, int runs,
                                     const std::function<bool(const Judged&)>& reached,
                                     const std::function<void(size_t, const Judged&)>& done = {});

private:
  Session& session_;
  std::vector<std::vector<std::unique_ptr<Workspace>>> spaces_; ///< [worker][target], made on first use
};

} // namespace idem
