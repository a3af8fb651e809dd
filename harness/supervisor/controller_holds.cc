/// The Controller's holds (controller.h): the gate that holds a verb's steps until openGate, the holds and
/// pauses a fault starts and what releases them (a process reaching a point, releaseHold, their step
/// ending under them), a process's requests held until a time, delayed steps, and the steps a server
/// action holds while the supervisor carries it out. Step decisions are in controller.cc, what a fault does
/// at its step in controller_fire.cc.
#include "supervisor/controller.h"

#include "plan/fault_kind.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace idem {

void Controller::holdRequestsUntil(int owner, Clock::time_point until, std::string why) {
  std::lock_guard<std::mutex> lock(mu_);
  states_[owner].holdUntil = until;
  requestHolds_[owner] = RequestHold{std::move(why)};
}

void Controller::gate(const std::string& verb, int count, std::string why, int skip) {
  std::lock_guard<std::mutex> lock(mu_);
  gateVerb_ = verb;
  gateLeft_ = count;
  gateSkip_ = std::max(0, skip);
  gateWhy_ = std::move(why);
}

int Controller::gated() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(std::count_if(gateHeld_.begin(), gateHeld_.end(), [&](int64_t t) { return inflight_.count(t) > 0; }));
}

void Controller::openGate(const std::string& why) {
  std::vector<proxy::StepToken> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    gateVerb_.clear();
    gateLeft_ = 0;
    gateSkip_ = 0;
    for (int64_t t : gateHeld_)
      if (inflight_.count(t)) out.push_back(proxy::StepToken{t});
    gateHeld_.clear();
    if (!out.empty())
      history_.append("harness", ops::Note{fmt::format("released {} held step{}: {}", out.size(), out.size() == 1 ? "" : "s", why)});
    ++activity_;
  }
  releaseTokens(out);
  cv_.notify_all();
}

bool Controller::stepOpen(int64_t token) const { return inflight_.count(token) > 0 || heldReplies_.count(token) > 0; }

int Controller::delayed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(
      std::count_if(delayed_.begin(), delayed_.end(), [&](const auto& d) { return stepOpen(d.first); }));
}

bool Controller::delaying() const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = Clock::now();
  return std::any_of(delayed_.begin(), delayed_.end(), [&](const auto& d) { return d.second > now && stepOpen(d.first); });
}

std::vector<proxy::StepToken> Controller::reached(const std::string& process, When when, const std::string& verb, int k) {
  if (when == When::After) processReplies_[{process, verb}]++;
  std::vector<proxy::StepToken> out;
  for (auto it = holds_.begin(); it != holds_.end();) {
    const auto& u = it->until;
    if (!u || u->process != process || u->when != when || u->verb != verb || u->k != k) {
      ++it;
      continue;
    }
    wake(*it);
    history_.append(it->process, ops::Note{fmt::format("{} {} released: {} reached {}", it->fault.kind, it->fault.str(),
                                                       process, u->point())});
    out.push_back(it->token);
    it = holds_.erase(it);
  }
  return out;
}

void Controller::releaseTokens(const std::vector<proxy::StepToken>& tokens) {
  if (!hub_) return;
  for (const auto& t : tokens) hub_->release(t);
}

std::vector<Controller::ActiveHold> Controller::activeHolds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return holds_;
}

void Controller::releaseHold(int64_t token, const std::string& why) {
  std::vector<proxy::StepToken> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = holds_.begin(); it != holds_.end(); ++it) {
      if (it->token.id != token) continue;
      wake(*it);
      history_.append(it->process, ops::Note{fmt::format("{} {} released: {}", it->join ? "step of" : it->fault.kind,
                                                         it->fault.str(), why)});
      out.push_back(it->token);
      if (auto g = outOfGroup_.find(it->owner); it->join && g != outOfGroup_.end()) {
        out.insert(out.end(), g->second.begin(), g->second.end());
        outOfGroup_.erase(g);
      }
      holds_.erase(it);
      break;
    }
    ++activity_;
  }
  releaseTokens(out);
  cv_.notify_all();
}

void Controller::wake(const ActiveHold& h) {
  if (h.pause && signals_) signals_->continueGroup(h.owner);
}

void Controller::holdEnded(int64_t token) {
  for (const auto& h : holds_)
    if (h.token.id == token) wake(h); // its step ended under it (a cut): awake before anything else
  holds_.erase(std::remove_if(holds_.begin(), holds_.end(), [&](const ActiveHold& h) { return h.token.id == token; }),
               holds_.end());
}

std::vector<Controller::ServerAction> Controller::takeServerActions() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(serverActions_, {});
}

void Controller::serverActionDone(const ServerAction& a, std::optional<ops::Aged> aged) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    history_.append(a.process, ops::FaultOp{a.fault, 0, std::move(aged)});
    // A forget takes acknowledgements back; a restart may lose one its server had not made durable.
    const auto action = faultKind(a.fault.kind, "fault").effect(a.fault).action;
    if (action == Effect::Action::Forget || action == Effect::Action::Restart) ackedAtBroker_.clear();
    ++activity_;
  }
  cv_.notify_all();
  if (hub_) hub_->release(a.token);
}

} // namespace idem
