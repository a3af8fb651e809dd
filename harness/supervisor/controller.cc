#include "supervisor/controller.h"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>

namespace idem {

Controller::Controller(History& history, std::vector<KillPoint> kills)
    : history_(history), kills_(std::move(kills)) {}

void Controller::addProcess(int owner, std::string name) {
  std::lock_guard<std::mutex> lock(mu_);
  names_[owner] = std::move(name);
  states_[owner].lastActivity = std::chrono::steady_clock::now();
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

void Controller::killLocked(std::unique_lock<std::mutex>& lock, int owner, const std::string& point) {
  auto& st = states_[owner];
  st.killed = true;
  st.killPoint = point;
  // The process may have connected before spawn() returned its pid to us: wait for it.
  pidCv_.wait_for(lock, std::chrono::seconds(5), [&] { return pids_.count(owner) > 0; });
  auto it = pids_.find(owner);
  if (it != pids_.end() && it->second > 0) ::killpg(it->second, SIGKILL);
  history_.append("kill", names_[owner], {{"point", point}, {"signal", SIGKILL}});
}

std::optional<std::string> Controller::takeKill(KillPoint::When when, const std::string& verb, int k) {
  auto hit = std::find_if(kills_.begin(), kills_.end(),
                          [&](const KillPoint& p) { return p.when == when && p.verb == verb && p.k == k; });
  if (hit == kills_.end()) return std::nullopt;
  std::string point = hit->str();
  kills_.erase(hit);
  return point;
}

bool Controller::onRequest(int owner, proxy::Server server, int conn, const proxy::StepInfo& step,
                           proxy::StepToken& token) {
  std::unique_lock<std::mutex> lock(mu_);
  Inflight f{owner, proxy::toString(server), conn, step, ++counts_[step.verb], history_.nowUs()};
  auto& st = states_[owner];
  st.steps++;
  totalSteps_++;
  st.lastActivity = std::chrono::steady_clock::now();
  ++activity_;
  if (auto point = takeKill(KillPoint::When::Before, step.verb, f.k)) {
    auto j = stepJson(f);
    j["outcome"] = "killed-before";
    history_.append("step", names_[owner], std::move(j));
    killLocked(lock, owner, *point);
    lock.unlock();
    if (hub_) hub_->cutNow(owner);
    cv_.notify_all();
    return true;
  }
  token.id = nextToken_++;
  st.inflight++;
  if (step.blocking) st.inflightBlocking++;
  inflight_.emplace(token.id, std::move(f));
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
  st.inflight--;
  if (f.step.blocking) st.inflightBlocking--;
  st.lastActivity = std::chrono::steady_clock::now();
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
    j["outcome"] = "killed-after";
    history_.append("step", names_[owner], std::move(j));
    killLocked(lock, owner, *point);
    lock.unlock();
    if (hub_) hub_->cutNow(owner);
    cv_.notify_all();
    return true;
  }
  j["outcome"] = "ok";
  history_.append("step", names_[owner], std::move(j));
  lock.unlock();
  cv_.notify_all();
  return false;
}

void Controller::onCut(int owner, const proxy::StepToken& token) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = inflight_.find(token.id);
  if (it == inflight_.end()) return;
  Inflight f = std::move(it->second);
  inflight_.erase(it);
  auto& st = states_[owner];
  st.inflight--;
  if (f.step.blocking) st.inflightBlocking--;
  ++activity_;
  auto j = stepJson(f);
  j["outcome"] = "cut";
  history_.append("step", names_[owner], std::move(j));
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

int Controller::totalSteps() const {
  std::lock_guard<std::mutex> lock(mu_);
  return totalSteps_;
}

uint64_t Controller::waitForActivity(uint64_t seen, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return activity_ != seen; });
  return activity_;
}

} // namespace idem
