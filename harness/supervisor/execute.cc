/// The consumer processes of one schedule: start them behind the proxies, notice kills and exits,
/// restart while work remains, release later phases of the producer once everything before is acked (and
/// entries sent in flight once everything before is delivered),
/// and end the run when its state is settled, when it is proven stuck, or at a limit of the harness.
/// Never judges: it only records, and says in the final op how the run ended (see RunEnd in
/// checkers/history_view.h and docs/verdicts.md):
///
///  settled  every entry delivered and acknowledged, and every live consumer idle for the settle time;
///  stuck    entries left while every live consumer was idle for CLAIM_IDLE_MS + the stall time, or kept
///           re-reading them without acknowledging them (a spin), and again after one restart;
///  limit    the deadline, the restart bound or the start timeout, while some consumer was busy: the
///           reason names it ("c2 silent for 58 s holding 3 entries; raise --deadline").
///
/// Idle and busy, and when a run with live processes is over, are supervisor/liveness.h's rule: a consumer
/// that holds delivered entries no one has acknowledged is busy, whatever its latest step was.
#include "supervisor/consumer_loop.h"
#include "supervisor/parked.h"

#include "core/error.h"
#include "plan/fault_kind.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <csignal>
#include <memory>

namespace idem {

ConsumerLoop::ConsumerLoop(Workspace::Impl& ws, History& h, const Schedule& s,
                           const std::map<int, std::map<std::string, std::string>>& fields)
    : ws_(ws), h_(h), s_(s), fields_(fields), opt_(ws.options), ctl_(h, s.faults),
      hub_({ws.servers.pg_host, ws.servers.pg_port}, ws.brokerSide(), ctl_), procs_(ws, h, ctl_, hub_),
      started_(Clock::now()) {
  ctl_.setHub(&hub_);
  ctl_.setSignals(&procs_);
  if (auto sink = ws.sinkSide()) hub_.setSink(std::move(*sink));
}

void ConsumerLoop::run() {
  std::error_code ec;
  for (const auto& p : std::filesystem::directory_iterator(ws_.logDir, ec)) std::filesystem::remove_all(p.path(), ec);
  sendNext();
  // c1 first; each of c2, c3, ... once the one before it has received entries or is idle (startNext), so
  // that which process holds which entries is the same in every replay, and a fault or hold named for
  // c1 acts on the same work every time.
  spawn("", "first");
  if (!ws_.target.relay.empty()) spawnRelay("first"); // the outbox relay runs beside them, as r1
  toStart_ = std::max(1, s_.consumers) - 1;
  End end = loop();
  if (settleSince_) ws_.phase("settle", *settleSince_);
  auto t = Clock::now();
  for (const auto& h : ctl_.activeHolds()) // what a hold still holds goes when its process stops
    ctl_.releaseHold(h.token.id, fmt::format("the run ended ({})", toString(end.end)));
  for (auto& p : live_) stopProcess(p);
  live_.clear();
  stopRelay();
  procs_.reapEscaped();
  t = ws_.phase("stop", t);
  for (int owner = 1; owner <= nproc_; ++owner) { // each process's start-up, and a replacement's wait beyond it
    auto st = ctl_.state(owner);
    if (!st.firstRequest || !execed_.count(owner)) continue;
    ws_.phase("start-up", execed_[owner], *st.firstRequest);
    if (st.holdUntil) ws_.phase("claim-wait", *st.firstRequest, *st.holdUntil);
  }
  ops::Final fin = ws_.finalState();
  ws_.phase("observe", t);
  fin.end = end.end;
  fin.limit = end.limit;
  fin.reason = end.reason;
  h_.append("harness", std::move(fin));
}

ConsumerLoop::milliseconds ConsumerLoop::remaining() const {
  auto left = opt_.deadline - std::chrono::duration_cast<milliseconds>(Clock::now() - started_);
  return std::max(milliseconds(0), left);
}

ConsumerLoop::Trigger ConsumerLoop::trigger(size_t i) const {
  if (i == 0) return Trigger::Now;
  if (s_.stream[i].phase > s_.stream[i - 1].phase) return Trigger::Acked;
  return Trigger::Delivered;
}

void ConsumerLoop::sendNext() {
  if (next_ >= s_.stream.size()) return;
  size_t end = next_ + 1;
  while (end < s_.stream.size() && s_.stream[end].phase == s_.stream[next_].phase && !s_.stream[end].inflight) ++end;
  const auto t = Clock::now();
  if (auto held = ctl_.readsHeldUntil(); held && (!readsHeldUntil_ || *held > *readsHeldUntil_)) readsHeldUntil_ = held;
  ws_.send(h_, s_, fields_, next_, end);
  for (const auto& op : h_.opsFrom(opsScanned_)) { // only what came since the last send: the history grows
    if (const auto* send = op.as<ops::Send>()) sent_.push_back(send->entry);
    opsScanned_ = static_cast<size_t>(op.index) + 1;
  }
  ws_.phase("send", t);
  next_ = end;
}

void ConsumerLoop::startNext() {
  if (toStart_ == 0) return;
  if (!live_.empty()) {
    auto st = ctl_.state(live_.back().owner);
    if (!st.gotEntries && !st.killed && !idle(live_.back())) return;
  }
  --toStart_;
  spawn("", "first");
}

std::map<std::string, std::string> ConsumerLoop::processEnv(const std::string& name) const {
  auto vars = ws_.broker->consumerEnv();
  vars["CONSUMER"] = name;
  vars["CLAIM_IDLE_MS"] = std::to_string(claimIdle());
  if (ws_.target.dedupTtlMs) vars["DEDUP_TTL_MS"] = std::to_string(*ws_.target.dedupTtlMs);
  for (auto& [k, v] : ws_.poisonEnv()) vars[k] = v;
  return vars;
}

void ConsumerLoop::spawn(const std::string& consumer, const char* why, std::optional<ClaimWait> wait) {
  Proc p;
  p.owner = ++nproc_;
  p.label = fmt::format("c{}", nproc_);
  p.consumer = consumer.empty() ? p.label : consumer;
  ctl_.addProcess(p.owner, p.label);
  if (wait) ctl_.holdRequestsUntil(p.owner, wait->until, std::move(wait->why));
  const auto started = procs_.start(p, p.consumer, processEnv(p.consumer), kConsumerLogCap, "consumer", why);
  p.ports = {started.ports.pg, started.ports.broker};
  p.brokerPort = started.ports.broker;
  execed_[p.owner] = started.execed;
  timeKills_.arm(p.label, p.child.pid(), execed_[p.owner]);
  live_.push_back(std::move(p));
}

ExitStatus ConsumerLoop::waitEnd(Proc& p, bool byKill) {
  timeKills_.cancel(p.child.pid());
  std::optional<ExitStatus> es = byKill ? p.child.waitFor(std::min(milliseconds(5000), remaining())) : p.child.poll();
  if (!es) es = p.child.stop(milliseconds(0));
  return *es;
}

bool ConsumerLoop::recordEnd(const Proc& p, const ExitStatus& es, bool byKill) {
  procs_.ended(p, es, byKill ? "harness" : "self");
  const bool metRestart = std::any_of(restarted_.begin(), restarted_.end(),
                                      [&](const Restarted& r) { return r.connections.count(p.owner) > 0; });
  restartOutcome(p, byKill ? "" : es.str());
  hub_.close(p.owner);
  return metRestart;
}

void ConsumerLoop::stopProcess(Proc& p) {
  timeKills_.cancel(p.child.pid());
  procs_.stop(p, std::min(opt_.grace, remaining()));
  restartOutcome(p, "");
  hub_.close(p.owner);
}

bool ConsumerLoop::ended(size_t i, bool byKill) {
  Proc p = std::move(live_[i]);
  live_.erase(live_.begin() + static_cast<long>(i));
  auto st = ctl_.state(p.owner);
  const auto t = Clock::now();
  const ExitStatus es = waitEnd(p, byKill);
  ws_.phase("kill", t);
  // A server restarted under it (while it was still connecting) is a fault it met, like a refused connection.
  const bool metRestart = recordEnd(p, es, byKill);
  if (byKill) ws_.broker->killed(p.brokerPort);
  lastEvent_ = Clock::now();
  if (!byKill && st.steps == 0 && st.faulted.empty() && !metRestart) { // (a connection refused by a fault is not that)
    // Nothing reached a server: there is nothing to judge, and restarting it would only repeat that.
    // Set-up (Kafka's ApiVersions and Metadata, a startup packet) is no step: a client whose set-up the
    // server refused ends here too.
    throw UsageError(fmt::format("target '{}' cannot start: {} exited ({}) before any step of its work reached a "
                                 "server (connection set-up is none: one the server refused ends here too)",
                                 ws_.target.name, p.label, es.str()));
  }
  if (nproc_ >= opt_.max_processes) return false;
  if (byKill) {
    // The dead consumer's entries become claimable once idle for CLAIM_IDLE_MS. Its replacement starts
    // now and the proxies hold its requests until then: it sees the servers exactly as if it had been
    // started CLAIM_IDLE_MS + 1 ms after the exit, and its start-up (exec, connections) overlaps the wait.
    spawn(s_.restart == RestartStyle::SameName ? p.consumer : "",
          s_.restart == RestartStyle::SameName ? "same-name" : "new-name",
          ClaimWait{Clock::now() + milliseconds(claimIdle() + 1),
                    fmt::format("the entries of the killed {} are claimable only CLAIM_IDLE_MS ({} ms) after its exit",
                                p.label, claimIdle())});
  } else {
    spawn("", "after-exit");
  }
  return true;
}

void ConsumerLoop::restartAll() {
  for (auto& p : live_) stopProcess(p);
  live_.clear();
  spawn("", "after-stall");
  toStart_ = std::max(1, s_.consumers) - 1; // the others as at the start (startNext)
}

bool ConsumerLoop::killedByHarness(const Proc& p, const Controller::ProcessState& st) {
  bool killed = st.killed && !st.killPoint.empty();
  if (auto f = timeKills_.fired(p.label)) {
    h_.append(p.label, ops::FaultOp{*f, SIGKILL});
    killed = true;
  }
  return killed;
}

bool ConsumerLoop::allParked() const {
  if (live_.empty()) return false;
  const uint64_t before = ctl_.activity();
  for (const auto& p : live_) {
    auto st = ctl_.state(p.owner);
    if (st.inflight == 0 || st.inflight != st.inflightBlocking || st.killed) return false;
    if (!parked(p.child.pid(), p.ports)) return false;
  }
  return ctl_.activity() == before;
}

std::vector<liveness::Process> ConsumerLoop::views() const {
  std::vector<liveness::Process> out;
  const auto now = Clock::now();
  for (const auto& p : live_) {
    out.push_back(ctl_.livenessOf(p.owner));
    // A consumer whose broker settles each delivery (no-ack, NOACK) acknowledges nothing when it is done:
    // what it was handed stays its work until it has sent no request of work (reads and keep-alives aside)
    // and been handed nothing for the stall time. (Ended at once instead, a run would stop it between the
    // statements of its work.)
    const auto st = ctl_.state(p.owner);
    out.back().workingUnacknowledged = st.settledOnDelivery && now - st.lastWorkAt < opt_.stall;
  }
  return out;
}

std::optional<std::string> ConsumerLoop::poisonUnbounded(const brokers::Progress& broker) {
  const auto& poison = ws_.scenario.poison;
  if (!poison || next_ < s_.stream.size() || !broker.delivered) return std::nullopt;
  const auto now = Clock::now();
  if (now - lastPoisonLook_ < milliseconds(50)) return std::nullopt;
  lastPoisonLook_ = now;
  const int bound = poison->maxDeliveries + kPoisonMargin;
  std::map<std::string, int> poisonEntries; // entry -> event
  std::map<std::string, int> deliveries;
  for (const auto& op : h_.ops()) {
    if (const auto* send = op.as<ops::Send>()) {
      if (ws_.scenario.isPoison(send->fields)) poisonEntries[send->entry] = send->n;
    } else if (const auto* step = op.as<ops::Step>()) {
      for (const auto& d : step->delivered)
        if (poisonEntries.count(d.entry) && step->replied()) ++deliveries[d.entry];
    }
  }
  std::vector<std::string> over;
  int most = 0;
  for (const auto& [entry, count] : deliveries) {
    most = std::max(most, count);
    if (count > bound) over.push_back(fmt::format("event {} (entry {}) delivered {} times", poisonEntries[entry], entry, count));
  }
  // Entries left besides it may still be in work; unless the poison event went on twice as long: then it
  // holds them up (a partition's records wait behind an uncommitted one), and that is judged too.
  const bool othersDone = broker.pending <= static_cast<int64_t>(over.size());
  if (over.empty() || (!othersDone && most <= 2 * bound)) return std::nullopt;
  return fmt::format("poison {}, past max_deliveries ({}) + {}: redelivered without end, {}",
                     fmt::join(over, ", "), poison->maxDeliveries, kPoisonMargin,
                     othersDone ? "every other entry acknowledged"
                                : fmt::format("{} other entr{} left", broker.pending - static_cast<int64_t>(over.size()),
                                              broker.pending - static_cast<int64_t>(over.size()) == 1 ? "y" : "ies"));
}

ConsumerLoop::End ConsumerLoop::loop() {
  brokers::Progress broker = ws_.broker->progress();
  liveness::RunEnding ending(opt_.settle, milliseconds(claimIdle()) + opt_.stall);
  bool restarted = false;                        // the one restart a stuck verdict needs
  // The latest work when a stall after a fault was first seen: it is proven once it lasted as long again.
  std::optional<Clock::time_point> faultStallWork;
  uint64_t seen = 0;
  auto lastPoll = Clock::now();
  while (true) {
    uint64_t before = seen;
    // Woken by any step, reply or fault at once; the 2 ms bound is for what sends no event: a process
    // that exits by itself (polled below), a parked proof that needs its thread to reach its read, the
    // deadline and the stall clocks.
    seen = ctl_.waitForActivity(seen, milliseconds(2));
    for (const auto& a : ctl_.takeServerActions()) { // its step waits until this is done
      const Effect effect = faultKind(a.fault.kind, "fault").effect(a.fault);
      std::optional<ops::Aged> aged;
      if (effect.action == Effect::Action::Forget) ws_.broker->forget();
      else if (effect.action == Effect::Action::Age) aged = ws_.age(effect.time.count());
      else restartServer(a.fault);
      ctl_.serverActionDone(a, std::move(aged));
      lastEvent_ = Clock::now();
    }
    const auto now = Clock::now();
    if (remaining().count() == 0) {
      std::string busy = busyReport(now);
      const std::string relay = outboxWhy(now);
      return {ops::RunEnd::Limit, "deadline",
              fmt::format("deadline of {} reached{}{}; {}", span(opt_.deadline.count()),
                          busy.empty() ? "" : " with " + busy, relay.empty() ? "" : "; " + relay, deadlineAdvice(now))};
    }
    if (End out; watchRelay(now, out)) return out;
    releaseInfeasibleHolds(now);
    startNext();
    // Processes that ended: killed at a kill point, or exited by themselves.
    for (size_t i = 0; i < live_.size(); ++i) {
      auto st = ctl_.state(live_[i].owner);
      bool killed = killedByHarness(live_[i], st);
      if (!killed && !live_[i].child.poll()) {
        if (st.killed) continue; // a kill point reached no process: it is exiting by itself
        if (st.steps == 0 && msBetween(st.spawned, now) > opt_.start_timeout.count())
          return {ops::RunEnd::Limit, "start-timeout",
                  fmt::format("{}; raise --start-timeout (now {})", busyWhy(live_[i], now), span(opt_.start_timeout.count()))};
        continue;
      }
      // It has exited. A kill point (on the proxies' thread) or a timekill may have killed it between the
      // look above and poll(): look again, so that the harness's own SIGKILL is never read as a crash.
      if (!killed) {
        st = ctl_.state(live_[i].owner);
        killed = killedByHarness(live_[i], st);
      }
      if (!ended(i, killed))
        return {ops::RunEnd::Limit, "restart-bound",
                fmt::format("restart bound of {} processes reached; raise --max-processes", opt_.max_processes)};
      i = static_cast<size_t>(-1); // the list changed: look again from the start
      ending.reset();
    }
    // The broker changes only through the consumers' steps (which wake us) or with time: ask it after
    // activity, or every 10 ms.
    if (seen == before && now - lastPoll < milliseconds(settleSince_ ? 2 : 10)) continue;
    lastPoll = now;
    broker = ws_.broker->progress();
    const bool delivered = broker.delivered;
    if (delivered && next_ < s_.stream.size() && trigger(next_) == Trigger::Delivered) {
      sendNext(); // in flight: the consumers may still be working on what came before
      lastEvent_ = Clock::now();
      continue;
    }
    if (auto why = poisonUnbounded(broker)) return {ops::RunEnd::Stuck, "", *why};
    liveness::Moment m{views(), broker.pending, delivered, toStart_ > 0, std::max(ctl_.lastWork(), lastEvent_)};
    m.readsHeldUntil = readsHeldUntil_;
    m.harnessHolds = !ctl_.activeHolds().empty() || ctl_.delaying();
    m.unseen = delivered && !ctl_.seenDelivered(sent_);
    // The outbox counts only once the consumers are done: before, it fills as they work.
    if (broker.pending == 0 && delivered) m.outbox = outbox(now);
    const liveness::Decision d = ending.observe(now, m, [&] { return allParked(); });
    if (d.kind == liveness::Decision::Kind::Settling || d.kind == liveness::Decision::Kind::Settled) {
      if (!settleSince_) settleSince_ = now;
      if (d.kind == liveness::Decision::Kind::Settling) continue;
      if (next_ < s_.stream.size()) {
        ws_.phase("settle", *std::exchange(settleSince_, std::nullopt));
        sendNext();
        lastEvent_ = Clock::now();
        continue;
      }
      return {};
    }
    settleSince_.reset();
    // Work is left. Stuck, proven: every live process idle (nothing done, nothing held) for CLAIM_IDLE_MS +
    // the stall time; or every pending entry spinning (re-read, never acknowledged). Either, again after a
    // restart (liveness.h).
    const std::string& why = d.why;
    if (why.empty()) continue;
    // A process that a fault other than a kill reached lives on with its aftermath (a dead connection, an
    // error it was told): in production no one restarts a live process, so when every live process is
    // such a one, the stall is proven as it is — it did not recover by itself.
    std::vector<std::string> unrecovered;
    for (const auto& p : live_)
      if (!ctl_.state(p.owner).faulted.empty()) unrecovered.push_back(unrecoveredWhy(p, now));
    if (!live_.empty() && unrecovered.size() == live_.size()) {
      // A client may wait on a timer of its own before it reconnects or asks again (a reconnect delay of
      // 5 s, a pull request's 5 s timeout): in place of the restart that confirms any other stall, a stall
      // of idle processes is proven once it lasted as long again, with no work by any in between. A spin is
      // no wait: proven as it is.
      // Clients' own recovery timers at their defaults run longer than that window: Bunny reconnects
      // 10 s after a dropped connection, the RabbitMQ Java client 5 s: so it lasts liveness::kClientRecoveryMs at least.
      const bool waitAgain = !d.spin;
      if (waitAgain && faultStallWork != m.lastWork) {
        faultStallWork = m.lastWork;
        h_.append("harness", ops::Note{fmt::format("{} ({}); waiting as long again, and {} at least, for it to "
                                                   "recover by itself",
                                                   why, fmt::join(unrecovered, ", "), span(liveness::kClientRecoveryMs))});
        ending.reset();
        continue;
      }
      if (waitAgain && msBetween(m.lastWork, now) < liveness::kClientRecoveryMs) {
        ending.reset();
        continue;
      }
      h_.append("harness", ops::Stall{broker.pending, broker.position, false, why});
      return {ops::RunEnd::Stuck, "",
              fmt::format("{}{}; the consumer did not recover from the fault by itself ({}; it lives, and no one "
                          "restarts a live process{})",
                          why, waitAgain ? ", twice" : "", fmt::join(unrecovered, ", "),
                          waitAgain ? fmt::format("; a client that waits longer than {} before it reconnects or asks "
                                                  "again needs a larger --stall-timeout",
                                                  span(std::max<int64_t>(liveness::kClientRecoveryMs, msBetween(m.lastWork, now))))
                                    : "")};
    }
    h_.append("harness", ops::Stall{broker.pending, broker.position, !restarted, why});
    if (restarted) return {ops::RunEnd::Stuck, "", why + ", also after a restart"};
    if (nproc_ >= opt_.max_processes)
      return {ops::RunEnd::Limit, "restart-bound", why + "; the restart bound leaves no restart to confirm it"};
    restarted = true;
    restartAll();
    ending.reset();
    lastEvent_ = Clock::now();
  }
}

void Workspace::Impl::runConsumers(History& h, const Schedule& s,
                                   const std::map<int, std::map<std::string, std::string>>& fields) {
  ConsumerLoop(*this, h, s, fields).run();
}

} // namespace idem
