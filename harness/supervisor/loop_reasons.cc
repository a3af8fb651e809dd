/// The words of a run's end (loop_reasons.cc of ConsumerLoop, consumer_loop.h): what server restarts did
/// to each process, why a process is busy at a limit, and why one that a fault reached did not recover.
#include "supervisor/consumer_loop.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace idem {

void ConsumerLoop::restartServer(const Fault& f) {
  const bool pg = f.args.at(0) == "pg";
  Restarted r{f.str(), pg ? "PostgreSQL" : ws_.broker->title(), {}};
  for (const auto& p : live_) r.connections[p.owner] = hub_.connections(p.owner);
  if (relay_) r.connections[relay_->owner] = hub_.connections(relay_->owner);
  ws_.restartServer(f.args.at(0), hub_);
  r.up = Clock::now();
  restarted_.push_back(std::move(r));
}

void ConsumerLoop::restartOutcome(const Proc& p, const std::string& exit) {
  for (auto& r : restarted_) {
    auto it = r.connections.find(p.owner);
    if (it == r.connections.end()) continue;
    int before = it->second;
    r.connections.erase(it);
    // A process may connect again and still exit: its server not up yet, the client's own give-up.
    const bool again = hub_.connections(p.owner) > before;
    std::string what = again && !exit.empty() ? fmt::format("{} connected again, then exited ({}) and was replaced", p.label, exit)
                       : again                ? fmt::format("{} reconnected", p.label)
                       : !exit.empty()        ? fmt::format("{} exited ({}) and was replaced", p.label, exit)
                                              : ops::Note::noNewConnection(p.label);
    h_.append(p.label, ops::Note::afterRestart(r.server, r.fault, what));
  }
}

std::optional<Controller::ActiveHold> ConsumerLoop::pauseOf(const Proc& p) const {
  for (auto& h : ctl_.activeHolds())
    if (h.pause && h.process == p.label) return std::move(h);
  return std::nullopt;
}

std::string ConsumerLoop::busyWhy(const Proc& p, Clock::time_point now) const {
  if (const auto h = pauseOf(p))
    return fmt::format("{} paused (SIGSTOP) at {} for {}", p.label, h->fault.str(), span(msBetween(h->since, now)));
  auto st = ctl_.state(p.owner);
  if (st.steps == 0)
    return fmt::format("{} made no request to PostgreSQL or {} in the {} since it started", p.label,
                       ws_.broker->title(),
                       span(msBetween(st.spawned, now)));
  if (!st.waitingFor.empty())
    return fmt::format("{} waiting {} for the reply to {}", p.label, span(msBetween(st.waitingSince, now)),
                       st.waitingFor);
  const std::string cut = st.cutAt.empty() ? "" : " (its connection was cut under " + st.cutAt + ")";
  if (const size_t holding = st.holding(); holding > 0)
    return fmt::format("{} silent for {} holding {} entr{}{}", p.label, span(msBetween(st.lastActivity, now)),
                       holding, holding == 1 ? "y" : "ies", cut);
  return fmt::format("{} silent for {} after its last step{}", p.label, span(msBetween(st.lastActivity, now)), cut);
}

std::string ConsumerLoop::unrecoveredWhy(const Proc& p, Clock::time_point now) const {
  auto st = ctl_.state(p.owner);
  for (auto r = restarted_.rbegin(); !st.cutAt.empty() && r != restarted_.rend(); ++r) {
    auto it = r->connections.find(p.owner);
    if (it == r->connections.end()) continue;
    // Counted from the server's return: a client refused while the server was down (a RabbitMQ node takes
    // seconds to boot) was not silent then.
    return fmt::format("{} made no request for {} after the {} restart ({}): its client {}", p.label,
                       span(msBetween(std::max(st.lastActivity, r->up), now)), r->server, r->fault,
                       hub_.connections(p.owner) > it->second ? "reconnected but sent nothing"
                                                              : "did not reconnect");
  }
  return fmt::format("{} after {}", p.label, st.faulted);
}

std::string ConsumerLoop::busyReport(Clock::time_point now) const {
  std::vector<std::string> parts;
  for (const auto& p : live_) {
    if (!idle(p)) parts.push_back(busyWhy(p, now));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::string ConsumerLoop::deadlineAdvice(Clock::time_point now) const {
  // A request the server refuses each time it is sent: the consumer can't get on, however long it is given.
  for (const auto& p : live_) {
    const auto st = ctl_.state(p.owner);
    for (const auto& [verb, refused] : st.refused)
      if (refused.first >= kRefusedAgain)
        return fmt::format("{}'s {} was refused by the server {} times in a row (the latest: {}): a longer deadline "
                           "only ends the same way",
                           p.label, verb, refused.first, refused.second);
  }
  for (const auto& p : live_) {
    if (idle(p) || pauseOf(p)) continue;
    auto st = ctl_.state(p.owner);
    if (st.steps == 0 || !st.waitingFor.empty() || msBetween(st.lastActivity, now) * 2 < opt_.deadline.count()) continue;
    // Slow and hung look alike from the outside (no request either way): the advice names both.
    return fmt::format("raise --deadline if {} works that long between requests; if it is hung (a deadlock, a "
                       "wait nothing ends), a longer deadline only ends the same way",
                       p.label);
  }
  return "raise --deadline";
}

} // namespace idem
