/// What the supervisor reads of the Controller (controller.h), each under its lock: a process's state and
/// its liveness view, the requests in flight, the faults still pending, when work last happened, whether
/// entries were delivered, and a wait for the next activity.
#include "supervisor/controller.h"

#include <algorithm>

namespace idem {

int Controller::inflightAll() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(inflight_.size());
}

uint64_t Controller::activity() const {
  std::lock_guard<std::mutex> lock(mu_);
  return activity_;
}

std::optional<Controller::Clock::time_point> Controller::readsHeldUntil() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<Clock::time_point> until;
  for (const auto& [id, f] : inflight_) {
    if (!f.step.blocking || f.step.waitMs <= 0) continue;
    const auto end = f.sent + std::chrono::milliseconds(f.step.waitMs);
    if (!until || end > *until) until = end;
  }
  return until;
}

Controller::ProcessState Controller::state(int owner) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = states_.find(owner);
  return it == states_.end() ? ProcessState{} : it->second;
}

liveness::Process Controller::livenessOf(int owner) const {
  std::lock_guard<std::mutex> lock(mu_);
  liveness::Process v;
  if (auto n = names_.find(owner); n != names_.end()) v.label = n->second;
  auto it = states_.find(owner);
  if (it == states_.end()) return v;
  const ProcessState& st = it->second;
  v.steps = st.steps;
  v.inflight = st.inflight;
  v.inflightBlocking = st.inflightBlocking;
  v.lastWasEmptyRead = st.lastWasEmptyRead;
  v.waiting = st.waiting;
  v.cutAt = st.cutAt;
  v.held = st.holding();
  for (const auto& [id, n] : st.handedAgain) {
    if (n < 3) continue; // handed again three times or more: a spin, since it was first handed again
    v.spinning.insert(id);
    auto since = st.handedAgainSince.at(id);
    v.spinSince = v.spinSince ? std::max(*v.spinSince, since) : since;
  }
  return v;
}

std::vector<Fault> Controller::pendingFaults() const {
  std::lock_guard<std::mutex> lock(mu_);
  return faults_;
}

Controller::Clock::time_point Controller::lastWork() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lastWork_;
}

bool Controller::seenDelivered(const std::vector<std::string>& entries) const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::all_of(entries.begin(), entries.end(), [&](const std::string& e) { return seenDelivered_.count(e) > 0; });
}

uint64_t Controller::waitForActivity(uint64_t seen, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return activity_ != seen; });
  return activity_;
}

} // namespace idem
