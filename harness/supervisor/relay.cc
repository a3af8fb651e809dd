/// A target's outbox relay (docs/target-contract.md, "An outbox relay"): a process of its own beside the
/// consumers, r1 first and r2, r3, … for each replacement, faulted and replaced like a consumer; it holds no
/// entries and polls without end, so its work is counted apart, by the manifest's outbox.pending query, and
/// the run settles only once that counts 0.
#include "supervisor/consumer_loop.h"

#include "core/error.h"

#include <fmt/format.h>

namespace idem {

void ConsumerLoop::spawnRelay(const char* why) {
  Proc p;
  p.owner = kRelayOwner + ++nrelay_;
  p.label = fmt::format("r{}", nrelay_);
  p.consumer = p.label;
  p.argv = ws_.target.relay;
  ctl_.addProcess(p.owner, p.label);
  const auto started = procs_.start(p, p.consumer, processEnv(p.consumer), kConsumerLogCap, "relay", why);
  p.ports = {started.ports.pg, started.ports.broker};
  p.brokerPort = started.ports.broker;
  execed_[p.owner] = started.execed;
  timeKills_.arm(p.label, p.child.pid(), execed_[p.owner]);
  relay_ = std::move(p);
}

bool ConsumerLoop::relayEnded(bool byKill) {
  Proc p = std::move(*relay_);
  relay_.reset();
  auto st = ctl_.state(p.owner);
  const ExitStatus es = waitEnd(p, byKill);
  const bool metRestart = recordEnd(p, es, byKill);
  lastEvent_ = Clock::now();
  if (!byKill && st.steps == 0 && st.faulted.empty() && !metRestart)
    throw UsageError(fmt::format("target '{}' cannot start its relay: {} exited ({}) before any request reached a "
                                 "server",
                                 ws_.target.name, p.label, es.str()));
  if (nrelay_ >= opt_.max_processes) return false;
  spawnRelay(byKill ? "new-name" : "after-exit");
  return true;
}

bool ConsumerLoop::watchRelay(Clock::time_point now, End& out) {
  if (!relay_) return false;
  auto st = ctl_.state(relay_->owner);
  bool killed = killedByHarness(*relay_, st);
  if (!killed && !relay_->child.poll()) {
    if (!st.killed && st.steps == 0 && msBetween(st.spawned, now) > opt_.start_timeout.count()) {
      out = {ops::RunEnd::Limit, "start-timeout",
             fmt::format("{}; raise --start-timeout (now {})", busyWhy(*relay_, now),
                         span(opt_.start_timeout.count()))};
      return true;
    }
    return false;
  }
  if (!killed) killed = killedByHarness(*relay_, ctl_.state(relay_->owner));
  if (relayEnded(killed)) return false;
  out = {ops::RunEnd::Limit, "restart-bound",
         fmt::format("restart bound of {} relay processes reached; raise --max-processes", opt_.max_processes)};
  return true;
}

void ConsumerLoop::stopRelay() {
  if (!relay_) return;
  stopProcess(*relay_);
  relay_.reset();
}

int64_t ConsumerLoop::outbox(Clock::time_point now) {
  if (ws_.target.relay.empty()) return 0;
  if (outboxAsked_ && now - *outboxAsked_ < milliseconds(10)) return outbox_;
  outboxAsked_ = now;
  const int64_t n = ws_.outboxPending().value_or(0);
  if (n < outbox_ || !outboxSince_) outboxSince_ = now;
  outbox_ = n;
  return n;
}

std::string ConsumerLoop::outboxWhy(Clock::time_point now) const {
  if (ws_.target.relay.empty() || outbox_ == 0) return "";
  return fmt::format("the outbox holds {} unsent row{} (outbox.pending), none sent for {}{}", outbox_,
                     outbox_ == 1 ? "" : "s",
                     span(outboxSince_ ? msBetween(*outboxSince_, now) : 0),
                     relay_ ? " while " + relay_->label + " runs" : " and no relay runs");
}

} // namespace idem
