#include "supervisor/controller.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace idem {

namespace {

bool isRead(const std::string& verb) {
  return verb == "XREADGROUP" || verb == "XREAD" || verb == "XAUTOCLAIM" || verb == "XCLAIM";
}

} // namespace

Controller::Controller(History& history, std::vector<KillPoint> kills)
    : history_(history), kills_(std::move(kills)) {}

void Controller::addProcess(int owner, std::string name) {
  std::lock_guard<std::mutex> lock(mu_);
  names_[owner] = std::move(name);
  auto& st = states_[owner];
  st.lastActivity = st.spawned = Clock::now();
}

void Controller::setPid(int owner, pid_t pgid) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pids_[owner] = pgid;
  }
  pidCv_.notify_all();
}

nlohmann::json Controller::stepJson(const Inflight& f) const {
  nlohmann::json j{{"server", f.server}, {"conn", f.conn}, {"verb", f.step.verb}, {"k", f.k},
                   {"detail", f.step.detail}, {"t_req_us", f.t_req_us}};
  if (!f.step.acked.empty()) j["acked"] = f.step.acked;
  if (f.step.blocking) j["blocking"] = true;
  return j;
}

void Controller::fireLocked(std::unique_lock<std::mutex>& lock, int owner, const std::string& point,
                            nlohmann::json step, bool before) {
  // The process may have connected before spawn() handed its pid over: wait for it (it is set right
  // after fork returns, so this is microseconds).
  pidCv_.wait_for(lock, std::chrono::seconds(5), [&] { return pids_.count(owner) > 0; });
  auto it = pids_.find(owner);
  int err = ESRCH;
  if (it != pids_.end() && it->second > 0) err = ::killpg(it->second, SIGKILL) == 0 ? 0 : errno;
  auto& st = states_[owner];
  st.killed = true; // its connections are cut either way: the supervisor must reap and replace it
  if (err == 0) {
    st.killPoint = point;
    step["outcome"] = before ? "killed-before" : "killed-after";
    history_.append("step", names_[owner], std::move(step));
    history_.append("kill", names_[owner], {{"point", point}, {"signal", SIGKILL}});
    return;
  }
  // No signal reached the process: the kill point did not fire. The step still ended as the proxy cut it.
  step["outcome"] = before ? "withheld" : "forwarded";
  history_.append("step", names_[owner], std::move(step));
  history_.append("note", names_[owner],
                  {{"message", fmt::format("kill point {} was reached but no signal was delivered: {}", point,
                                           it == pids_.end() ? "no process id yet" : std::strerror(err))}});
}

std::optional<std::string> Controller::takeKill(KillPoint::When when, const std::string& verb, int k) {
  auto hit = std::find_if(kills_.begin(), kills_.end(),
                          [&](const KillPoint& p) { return p.when == when && p.verb == verb && p.k == k; });
  if (hit == kills_.end()) return std::nullopt;
  std::string point = hit->str();
  kills_.erase(hit);
  return point;
}

void Controller::updateWaiting(int owner, ProcessState& st) {
  st.waitingFor.clear();
  for (const auto& [id, f] : inflight_) { // ordered by token: oldest first
    if (f.owner != owner || f.step.blocking) continue;
    st.waitingFor = fmt::format("{}#{} ({})", f.step.verb, f.k, f.server);
    st.waitingSince = f.sent;
    return;
  }
}

void Controller::endInflight(ProcessState& st, const Inflight& f) {
  st.inflight--;
  if (f.step.blocking) st.inflightBlocking--;
}

bool Controller::onRequest(int owner, proxy::Server server, int conn, const proxy::StepInfo& step,
                           proxy::StepToken& token) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto now = Clock::now();
  Inflight f{owner, proxy::toString(server), conn, step, ++counts_[step.verb], history_.nowUs(), now};
  auto& st = states_[owner];
  st.steps++;
  st.lastActivity = now;
  st.lastWasEmptyRead = false;
  if (!isRead(step.verb)) lastWork_ = now;
  for (const auto& id : step.acked) {
    st.held.erase(id);
    st.handedAgain.erase(id);
  }
  ++activity_;
  if (auto point = takeKill(KillPoint::When::Before, step.verb, f.k)) {
    fireLocked(lock, owner, *point, stepJson(f), true);
    lock.unlock();
    if (hub_) hub_->cutNow(owner);
    cv_.notify_all();
    return true;
  }
  token.id = nextToken_++;
  st.inflight++;
  if (step.blocking) st.inflightBlocking++;
  inflight_.emplace(token.id, std::move(f));
  updateWaiting(owner, st);
  lock.unlock();
  cv_.notify_all();
  return false;
}

bool Controller::onReply(int owner, const proxy::StepToken& token, const proxy::ReplyInfo& reply) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = inflight_.find(token.id);
  if (it == inflight_.end()) return false;
  Inflight f = std::move(it->second);
  inflight_.erase(it);
  auto& st = states_[owner];
  endInflight(st, f);
  updateWaiting(owner, st);
  const auto now = Clock::now();
  st.lastActivity = now;
  ++activity_;
  auto j = stepJson(f);
  if (reply.error) j["error"] = true;
  if (!reply.summary.empty()) j["summary"] = reply.summary;
  if (reply.empty_read) j["empty"] = true;
  if (!reply.delivered.empty()) {
    auto arr = nlohmann::json::array();
    for (const auto& e : reply.delivered) {
      nlohmann::json fields = nlohmann::json::object();
      for (const auto& [k, v] : e.fields) fields[k] = v;
      arr.push_back({{"entry", e.id}, {"fields", fields}});
    }
    j["delivered"] = arr;
  }
  if (auto point = takeKill(KillPoint::When::After, f.step.verb, f.k)) {
    fireLocked(lock, owner, *point, std::move(j), false);
    lock.unlock();
    if (hub_) hub_->cutNow(owner);
    cv_.notify_all();
    return true;
  }
  // The reply reaches the process: what it delivered is now in its hands.
  if (!reply.error) {
    for (const auto& e : reply.delivered) {
      if (!st.held.insert(e.id).second) st.handedAgain[e.id]++;
    }
    if (!reply.delivered.empty()) lastWork_ = now;
    st.lastWasEmptyRead = reply.empty_read && st.inflight == 0;
  }
  j["outcome"] = "ok";
  history_.append("step", names_[owner], std::move(j));
  lock.unlock();
  cv_.notify_all();
  return false;
}

void Controller::onCut(int owner, const proxy::StepToken& token, proxy::CutKind how) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = inflight_.find(token.id);
  if (it == inflight_.end()) return;
  Inflight f = std::move(it->second);
  inflight_.erase(it);
  auto& st = states_[owner];
  endInflight(st, f);
  updateWaiting(owner, st);
  ++activity_;
  auto j = stepJson(f);
  j["outcome"] = proxy::toString(how);
  history_.append("step", names_[owner], std::move(j));
  lock.unlock();
  cv_.notify_all();
}

void Controller::onOpaque(int owner, proxy::Server server, int conn, const char* direction, uint64_t offset,
                          const std::string& reason) {
  std::unique_lock<std::mutex> lock(mu_);
  history_.append("opaque", names_[owner],
                  {{"server", proxy::toString(server)}, {"conn", conn}, {"direction", direction}, {"offset", offset},
                   {"reason", reason}});
  ++activity_;
  lock.unlock();
  cv_.notify_all();
}

Controller::ProcessState Controller::state(int owner) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = states_.find(owner);
  return it == states_.end() ? ProcessState{} : it->second;
}

std::vector<KillPoint> Controller::pendingKills() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kills_;
}

Controller::Clock::time_point Controller::lastWork() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lastWork_;
}

uint64_t Controller::waitForActivity(uint64_t seen, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return activity_ != seen; });
  return activity_;
}

} // namespace idem
