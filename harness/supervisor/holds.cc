/// When a held step goes on (holds.cc of ConsumerLoop, consumer_loop.h): a hold or pause released once it
/// can't be met, and a rebalance's wait for its newcomer to join the group.
#include "supervisor/consumer_loop.h"

#include <fmt/format.h>

#include <algorithm>

namespace idem {

namespace {

/// How long a rebalance's newcomer may wait beyond the stall time for the group to deal it partitions: a
/// group's join waits for its members (librdkafka's mock: 3 s for an empty group's first member).
constexpr int64_t kGroupWaitMs = 10000;

} // namespace

void ConsumerLoop::releaseInfeasibleHolds(Clock::time_point now) {
  auto holds = ctl_.activeHolds();
  if (holds.empty()) return;
  const auto quiet = std::max<int64_t>(200, 3 * int64_t(claimIdle()));
  for (const auto& h : holds) {
    std::string why;
    if (h.join) {
      if (joined(h, now, quiet, why)) ctl_.releaseHold(h.token.id, why);
      continue;
    }
    // A timed pause (its MS, else the broker's hand-over time) ends at its time: being alone, or the others
    // idle, is what it is for. One that waits for another process's point ends as a hold does.
    const bool timed = h.pause && h.fault.args.size() != 3;
    if (timed) {
      const int64_t ms = h.fault.args.size() == 1 ? std::stoll(h.fault.args[0]) : ws_.broker->pauseMs(claimIdle());
      if (msBetween(h.since, now) >= ms) why = fmt::format("{} ms passed", ms);
    }
    bool othersIdle = std::all_of(live_.begin(), live_.end(), [&](const Proc& p) { return p.label == h.process || idle(p); });
    // Idle is not enough while a process has not looked for claimable entries since the held ones became
    // claimable (CLAIM_IDLE_MS after the hold began): it may be between a blocking read and its next
    // XAUTOCLAIM. Unless it never polls (only blocking reads): then after 5 times the quiet time.
    const auto claimable = h.since + milliseconds(claimIdle());
    bool othersPolled = std::all_of(live_.begin(), live_.end(), [&](const Proc& p) {
      auto st = ctl_.state(p.owner);
      return p.label == h.process || (st.lastPoll && *st.lastPoll >= claimable);
    });
    const auto quietFor = msBetween(std::max(h.since, ctl_.lastWork()), now);
    if (!why.empty()) {
      // its time passed
    } else if (h.fault.args.size() != 1 && !timed && othersIdle && quietFor >= quiet &&
               (othersPolled || quietFor >= 5 * quiet)) {
      why = fmt::format("every other process is idle ({} without work)", span(msBetween(std::max(h.since, ctl_.lastWork()), now)));
    } else if (!othersIdle && lockWaits() > 0) {
      why = lockWaitWhy(h.pause ? "paused" : "held");
    } else if (auto from = stallClockOf(h); !timed && from && msBetween(*from, now) >= opt_.stall.count()) {
      why = fmt::format("{} for {}, the longest a hold lasts (--stall-timeout)", h.pause ? "paused" : "held",
                        span(msBetween(h.since, now)));
    }
    if (!why.empty()) ctl_.releaseHold(h.token.id, why);
  }
}

bool ConsumerLoop::joined(const Controller::ActiveHold& h, Clock::time_point now, int64_t quiet, std::string& why) {
  auto it = joiners_.find(h.token.id);
  if (it == joiners_.end()) {
    // A newcomer joins; the waiting process (its broker requests wait with its step: Controller) is
    // evicted once the newcomer has asked to join, so that the group never stands empty in between.
    spawn("", "rebalance");
    joiners_[h.token.id] = Joiner{live_.back().label, std::nullopt, false};
    return false;
  }
  const auto p = std::find_if(live_.begin(), live_.end(), [&](const Proc& q) { return q.label == it->second.label; });
  if (p == live_.end()) {
    why = it->second.label + " exited";
    return true;
  }
  if (!it->second.evicted && ws_.broker->joining(p->brokerPort)) {
    for (const auto& q : live_)
      if (q.owner == h.owner) ws_.broker->evict(q.brokerPort);
    it->second.evicted = true;
  }
  const auto st = ctl_.state(p->owner);
  const auto quietFor = msBetween(std::max(h.since, ctl_.lastWork()), now);
  if ((st.gotEntries || st.lastWasEmptyRead) && idle(*p) && quietFor >= quiet) {
    why = fmt::format("{} joined the group, read and is idle ({} without work)", p->label, span(quietFor));
    return true;
  }
  if (lockWaits() > 0) {
    why = lockWaitWhy("waiting");
    return true;
  }
  // The stall time runs from the newcomer's first read: until the group deals it partitions, it waits
  // on the group's own timers (a join waits for the members, seconds), bounded by the stall time again.
  auto& j = it->second;
  if (!j.firstRead && (st.gotEntries || st.lastWasEmptyRead || st.lastPoll)) j.firstRead = now;
  const bool read = j.firstRead.has_value();
  const auto bound = read ? opt_.stall.count() : opt_.stall.count() + kGroupWaitMs;
  if (msBetween(read ? *j.firstRead : h.since, now) >= bound) {
    why = read ? fmt::format("waited {}, the longest a hold lasts (--stall-timeout)", span(msBetween(h.since, now)))
               : fmt::format("{} got nothing to read in {}", p->label, span(msBetween(h.since, now)));
    return true;
  }
  return false;
}

std::optional<ConsumerLoop::Clock::time_point> ConsumerLoop::stallClockOf(const Controller::ActiveHold& h) {
  auto from = h.since;
  for (const auto& p : live_) {
    if (p.label == h.process) continue;
    auto st = ctl_.state(p.owner);
    if (!st.firstRequest) return std::nullopt;
    from = std::max(from, *st.firstRequest);
  }
  return from;
}

std::string ConsumerLoop::lockWaitWhy(const char* whose) {
  return fmt::format("another process waits on a PostgreSQL lock (pg_stat_activity), which the {} process's "
                     "open transaction may hold", whose);
}

int64_t ConsumerLoop::lockWaits() {
  try {
    auto r = ws_.pg->query("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
                           "wait_event_type = 'Lock'");
    if (r.is_array() && !r.empty() && r[0].is_array() && !r[0].empty()) {
      const auto& v = r[0][0];
      return v.is_number() ? v.get<int64_t>() : v.is_string() ? std::stoll(v.get<std::string>()) : 0;
    }
  } catch (const std::exception&) {
  }
  return 0;
}

} // namespace idem
