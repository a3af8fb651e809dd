#include "supervisor/timekill.h"

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
  for (const auto& f : faults_) {
    std::lock_guard<std::mutex> lock(mu_);
    if (f.process != label || timers_.count(label)) continue;
    auto t = std::make_shared<Timer>(Timer{pgid});
    timers_[label] = t;
    const auto at = start + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double, std::milli>(std::stod(f.args.at(0))));
    threads_.emplace_back([this, t, at] {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_until(lock, at, [&] { return t->cancelled; });
      if (t->cancelled) return;
      ::killpg(t->pgid, SIGKILL); // its zombie pins the group until the supervisor reaps it (after cancel)
      t->fired = true;
    });
  }
}

std::vector<Fault> TimeKills::fired(const std::string& label) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = timers_.find(label);
  if (it == timers_.end() || !it->second->fired || it->second->recorded) return {};
  it->second->recorded = true;
  std::vector<Fault> out;
  for (const auto& f : faults_)
    if (f.process == label) out.push_back(f);
  return out;
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
