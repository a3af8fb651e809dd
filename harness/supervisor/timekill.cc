#include "supervisor/timekill.h"

#include "plan/fault_kind.h"

#include <algorithm>

#include <csignal>

namespace idem {

TimeKills::TimeKills(const std::vector<Fault>& faults) {
  for (const auto& f : faults)
    if (f.kind == "timekill") faults_.push_back(f);
}

TimeKills::~TimeKills() {
  cancel(0);
  for (auto& t : threads_) t.join();
}

void TimeKills::arm(const std::string& label, pid_t pgid, Clock::time_point start) {
  auto f = std::find_if(faults_.begin(), faults_.end(), [&](const Fault& x) { return x.process == label; });
  std::lock_guard<std::mutex> lock(mu_);
  if (f == faults_.end() || timers_.count(label)) return;
  auto t = std::make_shared<Timer>(Timer{*f, pgid});
  timers_[label] = t;
  const auto at = start + timeKillDelay(*f);
  threads_.emplace_back([this, t, at] {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_until(lock, at, [&] { return t->cancelled; });
    if (t->cancelled) return;
    ::killpg(t->pgid, SIGKILL); // its zombie pins the group until the supervisor reaps it (after cancel)
    t->fired = true;
  });
}

std::optional<Fault> TimeKills::fired(const std::string& label) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = timers_.find(label);
  if (it == timers_.end() || !it->second->fired || it->second->recorded) return std::nullopt;
  it->second->recorded = true;
  return it->second->fault;
}

void TimeKills::cancel(pid_t pgid) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [label, t] : timers_)
      if (pgid == 0 || t->pgid == pgid) t->cancelled = true;
  }
  cv_.notify_all();
}

} // namespace idem
