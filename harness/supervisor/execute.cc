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
#include "supervisor/controller.h"
#include "supervisor/liveness.h"
#include "supervisor/parked.h"
#include "supervisor/processes.h"
#include "supervisor/timekill.h"
#include "supervisor/workspace_impl.h"

#include "core/error.h"
#include "core/child.h"
#include "core/owner.h"
#include "plan/fault_kind.h"


#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <csignal>
#include <memory>
#include <optional>
#include <set>
#include <thread>

namespace idem {

namespace {

/// A consumer's log holds its first and last 512 KiB: a target that floods its output costs no memory or
/// disk beyond that (the report keeps the last 256 KiB).
constexpr size_t kConsumerLogCap = 1 << 20;

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

int64_t msBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<milliseconds>(b - a).count();
}

/// "58 s" / "450 ms"
std::string span(int64_t ms) { return ms >= 10000 ? fmt::format("{} s", ms / 1000) : fmt::format("{} ms", ms); }

/// How the run ended, for the final op.
struct End {
  ops::RunEnd end = ops::RunEnd::Settled;
  std::string limit; ///< deadline | restart-bound | start-timeout (end == limit)
  std::string reason;
};

/// How long a rebalance's newcomer may wait beyond the stall time for the group to deal it partitions: a
/// group's join waits for its members (librdkafka's mock: 3 s for an empty group's first member).
constexpr int64_t kGroupWaitMs = 10000;

/// The consumer processes of one execution.
class ConsumerLoop {
public:
  ConsumerLoop(Workspace::Impl& ws, History& h, const Schedule& s,
               const std::map<int, std::map<std::string, std::string>>& fields)
      : ws_(ws), h_(h), s_(s), fields_(fields), opt_(ws.options), ctl_(h, s.faults),
        hub_({ws.servers.pg_host, ws.servers.pg_port}, ws.brokerSide(), ctl_), procs_(ws, h, ctl_, hub_),
        started_(Clock::now()) {
    ctl_.setHub(&hub_);
    ctl_.setSignals(&procs_);
    if (auto sink = ws.sinkSide()) hub_.setSink(std::move(*sink));
  }

  void run() {
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
    for (auto& p : live_) {
      timeKills_.cancel(p.child.pid());
      procs_.stop(p, std::min(opt_.grace, remaining()));
      restartOutcome(p, "");
      hub_.close(p.owner);
    }
    live_.clear();
    if (relay_) {
      timeKills_.cancel(relay_->child.pid());
      procs_.stop(*relay_, std::min(opt_.grace, remaining()));
      restartOutcome(*relay_, "");
      hub_.close(relay_->owner);
      relay_.reset();
    }
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

private:
  /// A consumer process (its label unique per process: c1, c2, ...).
  struct Proc : TargetProcess {
    std::string consumer; ///< CONSUMER given to it (same as an earlier label on a same-name restart)
    std::set<int> ports;  ///< its proxies' ports (parked())
    int brokerPort = 0;   ///< its broker proxy's
  };

  /// CLAIM_IDLE_MS of this run: the schedule's, else --claim-idle-ms.
  int claimIdle() const { return s_.claimIdleMs > 0 ? s_.claimIdleMs : opt_.claim_idle_ms; }

  milliseconds remaining() const {
    auto left = opt_.deadline - std::chrono::duration_cast<milliseconds>(Clock::now() - started_);
    return std::max(milliseconds(0), left);
  }


  /// What the producer waits for before it sends the stream's entries from `i` on: nothing (the first),
  /// everything before acknowledged and the consumers settled (the first of a later phase), or everything
  /// before delivered (an entry sent in flight).
  enum class Trigger { Now, Acked, Delivered };
  Trigger trigger(size_t i) const {
    if (i == 0) return Trigger::Now;
    if (s_.stream[i].phase > s_.stream[i - 1].phase) return Trigger::Acked;
    return Trigger::Delivered;
  }

  /// Sends the next batch of the stream: the entries from the next unsent one up to (not including) the
  /// next one that waits for something (a later phase, an entry sent in flight).
  void sendNext() {
    if (next_ >= s_.stream.size()) return;
    size_t end = next_ + 1;
    while (end < s_.stream.size() && s_.stream[end].phase == s_.stream[next_].phase && !s_.stream[end].inflight) ++end;
    const auto t = Clock::now();
    ws_.send(h_, s_, fields_, next_, end);
    ws_.phase("send", t);
    next_ = end;
  }

  /// Starts the next of the schedule's first processes once the latest one has received entries, is idle
  /// (nothing to deliver), or is gone.
  void startNext() {
    if (toStart_ == 0) return;
    if (!live_.empty()) {
      auto st = ctl_.state(live_.back().owner);
      if (!st.gotEntries && !st.killed && !idle(live_.back())) return;
    }
    --toStart_;
    spawn("", "first");
  }

  /// Until when the proxies hold a new process's requests, and why (a replacement of a killed consumer).
  struct ClaimWait {
    Clock::time_point until;
    std::string why;
  };

  /// What every process of the target is told besides its proxies' URLs (Workspace::Impl::targetSpec): the
  /// broker's names, CONSUMER (`name`), CLAIM_IDLE_MS, DEDUP_TTL_MS, the poison variables. One place for
  /// consumers and the relay alike, so that both get whatever a run gives its processes.
  std::map<std::string, std::string> processEnv(const std::string& name) const {
    auto vars = ws_.broker->consumerEnv();
    vars["CONSUMER"] = name;
    vars["CLAIM_IDLE_MS"] = std::to_string(claimIdle());
    if (ws_.target.dedupTtlMs) vars["DEDUP_TTL_MS"] = std::to_string(*ws_.target.dedupTtlMs);
    for (auto& [k, v] : ws_.poisonEnv()) vars[k] = v;
    return vars;
  }

  void spawn(const std::string& consumer, const char* why, std::optional<ClaimWait> wait = {}) {
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

  /// Starts the target's outbox relay: r1 first, then r2, r3, … for each replacement (a fresh label, as a
  /// consumer's). Owners of relays are numbered apart from the consumers' (kRelayOwner + N).
  void spawnRelay(const char* why) {
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

  /// The relay ended (killed at a kill point, exited by itself): records it and starts its replacement at
  /// once (it claims nothing: the outbox rows a killed relay had locked are free once its connection is
  /// cut). Returns false at the restart bound.
  bool relayEnded(bool byKill) {
    Proc p = std::move(*relay_);
    relay_.reset();
    auto st = ctl_.state(p.owner);
    timeKills_.cancel(p.child.pid());
    std::optional<ExitStatus> es = byKill ? p.child.waitFor(std::min(milliseconds(5000), remaining())) : p.child.poll();
    if (!es) es = p.child.stop(milliseconds(0));
    procs_.ended(p, *es, byKill ? "harness" : "self");
    const bool metRestart = std::any_of(restarted_.begin(), restarted_.end(),
                                        [&](const Restarted& r) { return r.connections.count(p.owner) > 0; });
    restartOutcome(p, byKill ? "" : es->str());
    hub_.close(p.owner);
    lastEvent_ = Clock::now();
    if (!byKill && st.steps == 0 && st.faulted.empty() && !metRestart)
      throw UsageError(fmt::format("target '{}' cannot start its relay: {} exited ({}) before any request reached a "
                                   "server",
                                   ws_.target.name, p.label, es->str()));
    if (nrelay_ >= opt_.max_processes) return false;
    spawnRelay(byKill ? "new-name" : "after-exit");
    return true;
  }

  /// The relay's side of the run's end: false to go on; true with `out` set when the relay ended the run.
  bool watchRelay(Clock::time_point now, End& out) {
    if (!relay_) return false;
    auto st = ctl_.state(relay_->owner);
    bool killed = killedByHarness(*relay_, st);
    if (!killed && !relay_->child.poll()) {
      if (!st.killed && st.steps == 0 && msBetween(st.spawned, now) > opt_.start_timeout.count()) {
        out = {ops::RunEnd::Limit, "start-timeout",
               fmt::format("{}; raise --start-timeout (now {})", busyWhy(*relay_, now), span(opt_.start_timeout.count()))};
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

  /// The relay's unsent outbox rows (Workspace::Impl::outboxPending), asked at most every 10 ms; when the
  /// count last went down is the relay's progress (outboxWhy).
  int64_t outbox(Clock::time_point now) {
    if (ws_.target.relay.empty()) return 0;
    if (outboxAsked_ && now - *outboxAsked_ < milliseconds(10)) return outbox_;
    outboxAsked_ = now;
    const int64_t n = ws_.outboxPending().value_or(0);
    if (n < outbox_ || !outboxSince_) outboxSince_ = now;
    outbox_ = n;
    return n;
  }

  /// For a limit's reason: "the outbox holds 3 unsent rows (outbox.pending), none sent for 2 s by r2".
  std::string outboxWhy(Clock::time_point now) const {
    if (ws_.target.relay.empty() || outbox_ == 0) return "";
    return fmt::format("the outbox holds {} unsent row{} (outbox.pending), none sent for {}{}", outbox_,
                       outbox_ == 1 ? "" : "s", span(outboxSince_ ? msBetween(*outboxSince_, now) : 0),
                       relay_ ? " while " + relay_->label + " runs" : " and no relay runs");
  }

  /// Hold faults that can't be met are released, with the reason noted (a hold never hangs a run): every
  /// other live process idle (no work by any for max(3 × CLAIM_IDLE_MS, 200 ms): a read blocked with
  /// nothing to deliver, a poller between polls), one of them waiting on a PostgreSQL lock (the held
  /// process's open transaction may hold it), or the hold lasting longer than the stall time once the others
  /// have started (stallClockOf). A pause (pause.cc) is a hold whose release wakes its process (SIGCONT); a
  /// timed one ends at its time or on a lock wait, since being alone is what it is for.
  void releaseInfeasibleHolds(Clock::time_point now) {
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

  /// A rebalance's step: starts the newcomer once (the next cN, a new member of the group), and tells
  /// whether the step may go on, and why: the newcomer has read from the broker (so the group has dealt it
  /// partitions), handled what it read and is idle, quiet for `quiet` ms; or it can't be waited for (it
  /// exited, a process waits on a PostgreSQL lock the waiting one may hold, the stall time passed).
  bool joined(const Controller::ActiveHold& h, Clock::time_point now, int64_t quiet, std::string& why) {
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

  /// Since when a hold's stall time runs: from the hold, or from the latest first request of the other live
  /// processes; none while one of them is still starting up. A process that has not started (a Node process
  /// on a loaded machine takes seconds) can't reach the releasing point yet: releasing the hold then would
  /// leave the race it orders to how fast the other one starts.
  std::optional<Clock::time_point> stallClockOf(const Controller::ActiveHold& h) {
    auto from = h.since;
    for (const auto& p : live_) {
      if (p.label == h.process) continue;
      auto st = ctl_.state(p.owner);
      if (!st.firstRequest) return std::nullopt;
      from = std::max(from, *st.firstRequest);
    }
    return from;
  }

  /// Why a held step goes on when another process waits on a PostgreSQL lock (lockWaits): `whose` ("held",
  /// "waiting") names the process whose open transaction may hold it.
  static std::string lockWaitWhy(const char* whose) {
    return fmt::format("another process waits on a PostgreSQL lock (pg_stat_activity), which the {} process's "
                       "open transaction may hold", whose);
  }

  /// Backends of this workspace's database waiting on a lock.
  int64_t lockWaits() {
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

  /// A restart fault: restarts the server, and notes each live process's connections so far, to tell
  /// afterwards whether it reconnected or exited (restartOutcome).
  void restartServer(const Fault& f) {
    const bool pg = f.args.at(0) == "pg";
    Restarted r{f.str(), pg ? "PostgreSQL" : ws_.broker->title(), {}};
    for (const auto& p : live_) r.connections[p.owner] = hub_.connections(p.owner);
    if (relay_) r.connections[relay_->owner] = hub_.connections(relay_->owner);
    // While the server is down its proxy ports refuse connections, as the server's own port would.
    const auto server = pg ? proxy::Server::Pg : proxy::Server::Broker;
    hub_.refuse(server, true);
    try {
      ws_.restartServer(f.args.at(0));
    } catch (...) {
      hub_.refuse(server, false);
      throw;
    }
    hub_.refuse(server, false);
    restarted_.push_back(std::move(r));
  }

  /// How process `p` came through the restarts it lived through, once it ended (`exit`) or the run did:
  /// "c1 reconnected" / "c1 exited (exit 1) and was replaced" / "c1 made no new connection".
  void restartOutcome(const Proc& p, const std::string& exit) {
    for (auto& r : restarted_) {
      auto it = r.connections.find(p.owner);
      if (it == r.connections.end()) continue;
      int before = it->second;
      r.connections.erase(it);
      std::string what = hub_.connections(p.owner) > before
                             ? fmt::format("{} reconnected", p.label)
                             : !exit.empty() ? fmt::format("{} exited ({}) and was replaced", p.label, exit)
                                             : fmt::format("{} made no new connection", p.label);
      h_.append(p.label, ops::Note{fmt::format("after the {} restart ({}): {}", r.server, r.fault, what)});
    }
  }

  /// Whether the harness killed `p` (its state `st`): at a kill point, or by a timekill that fired since the
  /// last look (recorded here).
  bool killedByHarness(const Proc& p, const Controller::ProcessState& st) {
    bool killed = st.killed && !st.killPoint.empty();
    if (auto f = timeKills_.fired(p.label)) {
      h_.append(p.label, ops::FaultOp{*f, SIGKILL});
      killed = true;
    }
    return killed;
  }

  /// Every live process provably unable to act before a reply reaches it: only blocking reads in flight,
  /// and parked (supervisor/parked.h) — read between two looks at the controller that saw nothing move.
  bool allParked() const {
    if (live_.empty()) return false;
    const uint64_t before = ctl_.activity();
    for (const auto& p : live_) {
      auto st = ctl_.state(p.owner);
      if (st.inflight == 0 || st.inflight != st.inflightBlocking || st.killed) return false;
      if (!parked(p.child.pid(), p.ports)) return false;
    }
    return ctl_.activity() == before;
  }

  std::vector<liveness::Process> views() const {
    std::vector<liveness::Process> out;
    for (const auto& p : live_) out.push_back(ctl_.livenessOf(p.owner));
    return out;
  }

  bool idle(const Proc& p) const { return liveness::idle(ctl_.livenessOf(p.owner)); }

  /// Why a live process is not idle, for a limit's reason: "c2 silent for 58 s holding 3 entries".
  std::string busyWhy(const Proc& p, Clock::time_point now) const {
    for (const auto& h : ctl_.activeHolds())
      if (h.pause && h.process == p.label)
        return fmt::format("{} paused (SIGSTOP) at {} for {}", p.label, h.fault.str(), span(msBetween(h.since, now)));
    auto st = ctl_.state(p.owner);
    if (st.steps == 0)
      return fmt::format("{} made no request to PostgreSQL or {} in the {} since it started", p.label,
                         ws_.broker->title(),
                         span(msBetween(st.spawned, now)));
    if (!st.waitingFor.empty())
      return fmt::format("{} waiting {} for the reply to {}", p.label, span(msBetween(st.waitingSince, now)),
                         st.waitingFor);
    const std::string cut = st.cutAt.empty() ? "" : " (its connection was cut under " + st.cutAt + ")";
    if (!st.held.empty())
      return fmt::format("{} silent for {} holding {} entr{}{}", p.label, span(msBetween(st.lastActivity, now)),
                         st.held.size(), st.held.size() == 1 ? "y" : "ies", cut);
    return fmt::format("{} silent for {} after its last step{}", p.label, span(msBetween(st.lastActivity, now)), cut);
  }

  /// How a live process that a fault reached failed to recover, for a stuck reason: "c1 made no request for
  /// 3027 ms after the Valkey restart (restart:before:XREADGROUP#2:valkey): its client did not reconnect", or
  /// "c1 after drop:after:COMMIT#2".
  std::string unrecoveredWhy(const Proc& p, Clock::time_point now) const {
    auto st = ctl_.state(p.owner);
    for (auto r = restarted_.rbegin(); !st.cutAt.empty() && r != restarted_.rend(); ++r) {
      auto it = r->connections.find(p.owner);
      if (it == r->connections.end()) continue;
      return fmt::format("{} made no request for {} after the {} restart ({}): its client {}", p.label,
                         span(msBetween(st.lastActivity, now)), r->server, r->fault,
                         hub_.connections(p.owner) > it->second ? "reconnected but sent nothing"
                                                                : "did not reconnect");
    }
    return fmt::format("{} after {}", p.label, st.faulted);
  }

  std::string busyReport(Clock::time_point now) const {
    std::vector<std::string> parts;
    for (const auto& p : live_) {
      if (!idle(p)) parts.push_back(busyWhy(p, now));
    }
    return fmt::format("{}", fmt::join(parts, "; "));
  }

  /// A live process ended (killed at a kill point, exited by itself): one path for every case. Records
  /// its exit, closes its proxies, and starts its replacement unless the restart bound is reached.
  /// Returns false when the run must end (the bound).
  bool ended(size_t i, bool byKill) {
    Proc p = std::move(live_[i]);
    live_.erase(live_.begin() + static_cast<long>(i));
    auto st = ctl_.state(p.owner);
    const auto t = Clock::now();
    timeKills_.cancel(p.child.pid());
    std::optional<ExitStatus> es = byKill ? p.child.waitFor(std::min(milliseconds(5000), remaining())) : p.child.poll();
    if (!es) es = p.child.stop(milliseconds(0));
    ws_.phase("kill", t);
    procs_.ended(p, *es, byKill ? "harness" : "self");
    // A server restarted under it (while it was still connecting) is a fault it met, like a refused connection.
    const bool metRestart = std::any_of(restarted_.begin(), restarted_.end(),
                                        [&](const Restarted& r) { return r.connections.count(p.owner) > 0; });
    restartOutcome(p, byKill ? "" : es->str());
    hub_.close(p.owner);
    if (byKill) ws_.broker->killed(p.brokerPort);
    lastEvent_ = Clock::now();
    if (!byKill && st.steps == 0 && st.faulted.empty() && !metRestart) { // (a connection refused by a fault is not that)
      // Nothing reached a server: there is nothing to judge, and restarting it would only repeat that.
      throw UsageError(fmt::format("target '{}' cannot start: {} exited ({}) before any request reached a server",
                                   ws_.target.name, p.label, es->str()));
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

  /// Stops every live process and starts as many new ones as the schedule runs at once (a stall: all idle,
  /// or spinning, with work left).
  void restartAll() {
    for (auto& p : live_) {
      timeKills_.cancel(p.child.pid());
      procs_.stop(p, std::min(opt_.grace, remaining()));
      restartOutcome(p, "");
      hub_.close(p.owner);
    }
    live_.clear();
    spawn("", "after-stall");
    toStart_ = std::max(1, s_.consumers) - 1; // the others as at the start (startNext)
  }

  /// Poison events: a consumer that redelivers a poison event without end is judged once the event was
  /// delivered max_deliveries + kPoisonMargin times and every other entry is acknowledged (or twice that
  /// many times, whatever is left), rather than when the deadline ends the run: more deliveries would prove
  /// nothing more. The reason, when it is so.
  std::optional<std::string> poisonUnbounded(const brokers::Progress& broker) {
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

  End loop() {
    brokers::Progress broker = ws_.broker->progress();
    liveness::RunEnding ending(opt_.settle, milliseconds(claimIdle()) + opt_.stall);
    bool restarted = false;                        // the one restart a stuck verdict needs
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
                fmt::format("deadline of {} reached{}{}; raise --deadline", span(opt_.deadline.count()),
                            busy.empty() ? "" : " with " + busy, relay.empty() ? "" : "; " + relay)};
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
        h_.append("harness", ops::Stall{broker.pending, broker.position, false, why});
        return {ops::RunEnd::Stuck, "",
                fmt::format("{}; the consumer did not recover from the fault by itself ({}; it lives, and no one "
                            "restarts a live process)",
                            why, fmt::join(unrecovered, ", "))};
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

  Workspace::Impl& ws_;
  History& h_;
  const Schedule& s_;
  const std::map<int, std::map<std::string, std::string>>& fields_;
  const RunOptions& opt_;
  Controller ctl_;
  proxy::Hub hub_;
  TargetProcesses procs_;
  const Clock::time_point started_;
  std::vector<Proc> live_;
  /// The target's outbox relay (r1, r2, …), when it has one: apart from live_, since it holds no entries and
  /// polls without end; its work is done when the outbox query counts 0 (outbox()).
  std::optional<Proc> relay_;
  int nrelay_ = 0;
  static constexpr int kRelayOwner = 100000;
  int64_t outbox_ = 0;
  std::optional<Clock::time_point> outboxAsked_, outboxSince_;
  struct Restarted {
    std::string fault, server;
    std::map<int, int> connections; ///< owner -> connections made before the restart (processes not told yet)
  };
  std::vector<Restarted> restarted_;
  int nproc_ = 0;
  struct Joiner {
    std::string label;                           ///< the process that joined
    std::optional<Clock::time_point> firstRead;  ///< when it was first seen to have read (it has partitions)
    bool evicted = false;                        ///< the waiting process's member was evicted
  };
  std::map<int64_t, Joiner> joiners_; ///< a rebalance's held step (its token) -> its newcomer
  TimeKills timeKills_{s_.faults};
  size_t next_ = 0;  ///< the first stream entry not sent yet
  int toStart_ = 0;  ///< first processes still to start (startNext)
  Clock::time_point lastEvent_ = Clock::now(); ///< the latest spawn, exit or phase
  /// Since when everything sent is acknowledged and every process idle (the settle phase), if it is.
  std::optional<Clock::time_point> settleSince_;
  std::map<int, Clock::time_point> execed_; ///< owner -> when its spawn returned (its start-up begins)
  Clock::time_point lastPoisonLook_{};      ///< poisonUnbounded's latest look at the history
};

} // namespace

void Workspace::Impl::runConsumers(History& h, const Schedule& s,
                                   const std::map<int, std::map<std::string, std::string>>& fields) {
  ConsumerLoop(*this, h, s, fields).run();
}

} // namespace idem
