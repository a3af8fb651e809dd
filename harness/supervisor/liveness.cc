#include "supervisor/liveness.h"

#include <fmt/format.h>

#include <algorithm>

namespace idem::liveness {

int64_t msBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

std::string span(int64_t ms) { return ms >= 10000 ? fmt::format("{} s", ms / 1000) : fmt::format("{} ms", ms); }

namespace {

std::string entries(size_t n) { return fmt::format("{} entr{}", n, n == 1 ? "y" : "ies"); }

} // namespace

bool idle(const Process& p) {
  if (p.inflight > p.inflightBlocking) return false; // waiting for a reply it will act on
  if (p.held > 0) return false;                      // delivered work it has not settled
  if (p.workingUnacknowledged) return false;         // delivered work no acknowledgement will end
  if (p.inflight > 0) return true;                   // only blocking reads (and keep-alives): acts when one returns
  // Between polls, waiting for the broker's pushes, or reconnecting on its own timer.
  return p.lastWasEmptyRead || p.waiting || !p.cutAt.empty();
}

std::string busyWhy(const Process& p) {
  if (p.steps == 0) return "starting (no request yet)";
  if (p.inflight > p.inflightBlocking) return "waiting for a reply";
  if (p.held > 0) return "holding " + entries(p.held);
  if (p.workingUnacknowledged) return "working on entries its broker settled as it delivered them";
  return "between two steps of its work";
}

Decision RunEnding::observe(Clock::time_point now, const Moment& m, const std::function<bool()>& parked) {
  const bool allIdle = std::all_of(m.live.begin(), m.live.end(), [](const Process& p) { return idle(p); });
  const int64_t quiet = msBetween(m.lastWork, now);
  if (m.pending == 0 && m.delivered) {
    allIdleSince_.reset();
    if (!allIdle || m.toStart || m.outbox > 0) return {};
    // A reply on its way that carries entries its broker settled as it sent them (NOACK): the consumer has
    // not got them yet, however long the proxy takes to read it on a busy machine. Waited for until a proxy
    // carried it, for the stall time at most (a reply its connection's end swallowed never comes).
    if (m.unseen && quiet < stall_.count()) return {Decision::Kind::Settling, ""};
    // Quiet for the settle time, or proven over at once: every live process parked in a blocking read.
    if (!m.unseen && quiet < settle_.count() && !parked()) return {Decision::Kind::Settling, ""};
    return {Decision::Kind::Settled, ""};
  }
  // Work is left. A stall: every live process idle, and no work by any, for the stall time; or every
  // pending entry spinning (handed again and again to the process holding it, never settled), for the stall
  // time. Never while the harness holds a process: the hold ends first, and idleness counts from then.
  if (m.harnessHolds) {
    allIdleSince_.reset();
    heldAt_ = now;
    return {};
  }
  if (allIdle) {
    if (!allIdleSince_) allIdleSince_ = now;
    auto since = std::max(*allIdleSince_, m.lastWork);
    // A read the broker holds to its wait though entries came meanwhile: idleness counts from its end.
    if (m.readsHeldUntil) since = std::max(since, *m.readsHeldUntil);
    if (msBetween(since, now) >= stall_.count()) {
      return {Decision::Kind::Stalled,
              fmt::format("every consumer idle for {} with {} pending{}", span(msBetween(since, now)),
                          entries(static_cast<size_t>(m.pending)), m.delivered ? "" : " and entries never delivered")};
    }
  } else {
    allIdleSince_.reset();
  }
  std::set<std::string> spin;
  for (const Process& p : m.live) spin.insert(p.spinning.begin(), p.spinning.end());
  // A few re-reads prove nothing: a consumer may claim its own entries again while a worker of it is still on
  // them. A spin is a stall once its entries have been handed back, unsettled, for the stall time.
  std::optional<Clock::time_point> spinSince;
  for (const Process& p : m.live)
    if (p.spinSince) spinSince = spinSince ? std::max(*spinSince, *p.spinSince) : *p.spinSince;
  if (spinSince && heldAt_) spinSince = std::max(*spinSince, *heldAt_);
  if (m.delivered && !spin.empty() && m.pending <= static_cast<int64_t>(spin.size()) && spinSince &&
      msBetween(*spinSince, now) >= stall_.count())
    return {Decision::Kind::Stalled,
            fmt::format("{} re-read three times or more by the consumer holding {} and never acknowledged",
                        entries(spin.size()), spin.size() == 1 ? "it" : "them"), true};
  return {};
}

} // namespace idem::liveness
