#pragma once
/// timekill faults (plan/faults/timekill.cc): the kill of timer-based chaos tools, at an instant after a
/// process's spawn rather than at a step. Each armed timekill has a thread of its own that sleeps until
/// its instant and SIGKILLs the process group there and then, wherever the process is — not at the
/// supervisor's next wake-up, which follows a step and so would never land between two steps. The
/// supervisor then asks fired() and ends the process as at a kill point.
#include "plan/fault.h"

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace idem {

class TimeKills {
public:
  using Clock = std::chrono::steady_clock;

  explicit TimeKills(const std::vector<Fault>& faults);
  ~TimeKills(); ///< cancels every timer and joins its thread
  TimeKills(const TimeKills&) = delete;
  TimeKills& operator=(const TimeKills&) = delete;

  /// Arms the timekill of process `label` (the schedule's first for it, once per label), whose group is
  /// `pgid`, at its delay after `start` (when its spawn returned).
  void arm(const std::string& label, pid_t pgid, Clock::time_point start);
  /// The timekill of `label` if its timer fired and this is the first time it is asked (record it and end
  /// the process).
  std::optional<Fault> fired(const std::string& label);
  /// No timekill acts on `pgid` any more (it is about to be reaped), or on any process (pgid 0).
  void cancel(pid_t pgid);

private:
  struct Timer {
    Fault fault;
    pid_t pgid = 0;
    bool fired = false, cancelled = false, recorded = false;
  };
  std::vector<Fault> faults_; ///< the schedule's timekill faults
  std::map<std::string, std::shared_ptr<Timer>> timers_; ///< process label -> its armed timekill
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::thread> threads_;
};

} // namespace idem
