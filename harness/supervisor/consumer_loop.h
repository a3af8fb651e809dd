#pragma once
/// Private to the supervisor: the consumer processes of one schedule (Workspace::Impl::runConsumers), one
/// class whose parts live in a file each: execute.cc (the run, the producer's phases, the consumers'
/// starts, ends and restarts, and when the run is over), relay.cc (a target's outbox relay: r1, r2, …
/// and its outbox.pending), holds.cc (when a hold, pause or rebalance's wait goes on) and
/// loop_reasons.cc (server restarts, and the words of a limit's or a stall's reason).
#include "supervisor/controller.h"
#include "supervisor/liveness.h"
#include "supervisor/processes.h"
#include "supervisor/timekill.h"
#include "supervisor/workspace_impl.h"

#include "history/history.h"
#include "plan/fault.h"
#include "proxy/hub.h"

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace idem {

/// The consumer processes of one execution.
class ConsumerLoop {
public:
  ConsumerLoop(Workspace::Impl& ws, History& h, const Schedule& s,
               const std::map<int, std::map<std::string, std::string>>& fields);

  /// Starts the consumers (and the relay), runs until the run ends, stops everything and appends the final op.
  void run();

private:
  using Clock = std::chrono::steady_clock;
  using milliseconds = std::chrono::milliseconds;
  static int64_t msBetween(Clock::time_point a, Clock::time_point b) { return liveness::msBetween(a, b); }
  static std::string span(int64_t ms) { return liveness::span(ms); }

  /// A consumer's log holds its first and last 512 KiB: a target that floods its output costs no memory or
  /// disk beyond that (the report keeps the last 256 KiB).
  static constexpr size_t kConsumerLogCap = 1 << 20;
  /// Owners of relays are numbered apart from the consumers' (kRelayOwner + N).
  static constexpr int kRelayOwner = 100000;
  /// A request refused this many times in a row, at the deadline: the advice names it instead of a longer
  /// deadline (ProcessState::refused).
  static constexpr int kRefusedAgain = 3;

  /// How the run ended, for the final op.
  struct End {
    ops::RunEnd end = ops::RunEnd::Settled;
    std::string limit; ///< deadline | restart-bound | start-timeout (end == limit)
    std::string reason;
  };

  /// A consumer process (its label unique per process: c1, c2, ...).
  struct Proc : TargetProcess {
    std::string consumer; ///< CONSUMER given to it (same as an earlier label on a same-name restart)
    std::set<int> ports;  ///< its proxies' ports (parked())
    int brokerPort = 0;   ///< its broker proxy's
  };

  /// Until when the proxies hold a new process's requests, and why (a replacement of a killed consumer).
  struct ClaimWait {
    Clock::time_point until;
    std::string why;
  };

  /// What the producer waits for before it sends the stream's entries from `i` on: nothing (the first),
  /// everything before acknowledged and the consumers settled (the first of a later phase), or everything
  /// before delivered (an entry sent in flight).
  enum class Trigger { Now, Acked, Delivered };

  // execute.cc

  /// CLAIM_IDLE_MS of this run: the schedule's, else --claim-idle-ms.
  int claimIdle() const { return s_.claimIdleMs > 0 ? s_.claimIdleMs : opt_.claim_idle_ms; }
  milliseconds remaining() const;
  Trigger trigger(size_t i) const;
  /// Sends the next batch of the stream: the entries from the next unsent one up to (not including) the
  /// next one that waits for something (a later phase, an entry sent in flight).
  void sendNext();
  /// Starts the next of the schedule's first processes once the latest one has received entries, is idle
  /// (nothing to deliver), or is gone.
  void startNext();
  /// What every process of the target is told besides its proxies' URLs (Workspace::Impl::targetSpec): the
  /// broker's names, CONSUMER (`name`), CLAIM_IDLE_MS, DEDUP_TTL_MS, the poison variables. One place for
  /// consumers and the relay alike, so that both get whatever a run gives its processes.
  std::map<std::string, std::string> processEnv(const std::string& name) const;
  void spawn(const std::string& consumer, const char* why, std::optional<ClaimWait> wait = {});
  /// Stops `p` at the run's end or before a restart of them all (SIGTERM, then SIGKILL after the grace).
  void stopProcess(Proc& p);
  /// How `p`, seen ended (`byKill`: by the harness), exited: waited for a while after a kill, else polled.
  ExitStatus waitEnd(Proc& p, bool byKill);
  /// Records that `p` ended with `es`, and how it came through the server restarts, and closes its proxies.
  /// Whether it met a server restart: a fault it met while connecting, like a refused connection.
  bool recordEnd(const Proc& p, const ExitStatus& es, bool byKill);
  /// A live process ended (killed at a kill point, exited by itself): one path for every case. Records
  /// its exit, closes its proxies, and starts its replacement unless the restart bound is reached.
  /// Returns false when the run must end (the bound).
  bool ended(size_t i, bool byKill);
  /// Stops every live process and starts as many new ones as the schedule runs at once (a stall: all idle,
  /// or spinning, with work left).
  void restartAll();
  /// Poison events: a consumer that redelivers a poison event without end is judged once the event was
  /// delivered max_deliveries + kPoisonMargin times and every other entry is acknowledged (or twice that
  /// many times, whatever is left), rather than when the deadline ends the run: more deliveries would prove
  /// nothing more. The reason, when it is so.
  std::optional<std::string> poisonUnbounded(const brokers::Progress& broker);
  /// Whether the harness killed `p` (its state `st`): at a kill point, or by a timekill that fired since the
  /// last look (recorded here).
  bool killedByHarness(const Proc& p, const Controller::ProcessState& st);
  /// Every live process provably unable to act before a reply reaches it: only blocking reads in flight,
  /// and parked (supervisor/parked.h) — read between two looks at the controller that saw nothing move.
  bool allParked() const;
  std::vector<liveness::Process> views() const;
  bool idle(const Proc& p) const { return liveness::idle(ctl_.livenessOf(p.owner)); }
  End loop();

  // relay.cc

  /// Starts the target's outbox relay: r1 first, then r2, r3, … for each replacement (a fresh label, as a
  /// consumer's).
  void spawnRelay(const char* why);
  /// The relay ended (killed at a kill point, exited by itself): records it and starts its replacement at
  /// once (it claims nothing: the outbox rows a killed relay had locked are free once its connection is
  /// cut). Returns false at the restart bound.
  bool relayEnded(bool byKill);
  /// The relay's side of the run's end: false to go on; true with `out` set when the relay ended the run.
  bool watchRelay(Clock::time_point now, End& out);
  /// Stops the relay at the run's end.
  void stopRelay();
  /// The relay's unsent outbox rows (Workspace::Impl::outboxPending), asked at most every 10 ms; when the
  /// count last went down is the relay's progress (outboxWhy).
  int64_t outbox(Clock::time_point now);
  /// For a limit's reason: "the outbox holds 3 unsent rows (outbox.pending), none sent for 2 s by r2".
  std::string outboxWhy(Clock::time_point now) const;

  // holds.cc

  /// Hold faults that can't be met are released, with the reason noted (a hold never hangs a run): every
  /// other live process idle (no work by any for max(3 × CLAIM_IDLE_MS, 200 ms): a read blocked with
  /// nothing to deliver, a poller between polls), one of them waiting on a PostgreSQL lock (the held
  /// process's open transaction may hold it), or the hold lasting longer than the stall time once the others
  /// have started (stallClockOf). A pause (pause.cc) is a hold whose release wakes its process (SIGCONT); a
  /// timed one ends at its time or on a lock wait, since being alone is what it is for.
  void releaseInfeasibleHolds(Clock::time_point now);
  /// A rebalance's step: starts the newcomer once (the next cN, a new member of the group), and tells
  /// whether the step may go on, and why: the newcomer has read from the broker (so the group has dealt it
  /// partitions), handled what it read and is idle, quiet for `quiet` ms; or it can't be waited for (it
  /// exited, a process waits on a PostgreSQL lock the waiting one may hold, the stall time passed).
  bool joined(const Controller::ActiveHold& h, Clock::time_point now, int64_t quiet, std::string& why);
  /// Since when a hold's stall time runs: from the hold, or from the latest first request of the other live
  /// processes; none while one of them is still starting up. A process that has not started (a Node process
  /// on a loaded machine takes seconds) can't reach the releasing point yet: releasing the hold then would
  /// leave the race it orders to how fast the other one starts.
  std::optional<Clock::time_point> stallClockOf(const Controller::ActiveHold& h);
  /// Why a held step goes on when another process waits on a PostgreSQL lock (lockWaits): `whose` ("held",
  /// "waiting") names the process whose open transaction may hold it.
  static std::string lockWaitWhy(const char* whose);
  /// Backends of this workspace's database waiting on a lock.
  int64_t lockWaits();

  // loop_reasons.cc

  /// A restart fault: restarts the server, and notes each live process's connections so far, to tell
  /// afterwards whether it reconnected or exited (restartOutcome).
  void restartServer(const Fault& f);
  /// How process `p` came through the restarts it lived through, once it ended (`exit`) or the run did:
  /// "c1 reconnected" / "c1 exited (exit 1) and was replaced" / "c1 made no new connection".
  void restartOutcome(const Proc& p, const std::string& exit);
  /// Why a live process is not idle, for a limit's reason: "c2 silent for 58 s holding 3 entries".
  std::string busyWhy(const Proc& p, Clock::time_point now) const;
  /// The pause (SIGSTOP) `p` is stopped in, if any.
  std::optional<Controller::ActiveHold> pauseOf(const Proc& p) const;
  /// How a live process that a fault reached failed to recover, for a stuck reason: "c1 made no request for
  /// 3027 ms after the Valkey restart (restart:before:XREADGROUP#2:valkey): its client did not reconnect", or
  /// "c1 after drop:after:COMMIT#2".
  std::string unrecoveredWhy(const Proc& p, Clock::time_point now) const;
  /// Every busy live process's busyWhy, joined by "; ".
  std::string busyReport(Clock::time_point now) const;
  /// What to do about a run that reached --deadline with its busy processes: raise it, and, when one has been
  /// silent (no request, no reply awaited) for half of it or more, that such a one may be hung rather than slow.
  std::string deadlineAdvice(Clock::time_point now) const;

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
  int64_t outbox_ = 0;
  std::optional<Clock::time_point> outboxAsked_, outboxSince_;
  struct Restarted {
    std::string fault, server;
    std::map<int, int> connections; ///< owner -> connections made before the restart (processes not told yet)
    Clock::time_point up{};         ///< when the server was back: silence counts from then (unrecoveredWhy)
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
  std::vector<std::string> sent_; ///< the entries sent so far (their ids, as ops::Send records them)
  size_t opsScanned_ = 0;         ///< the history's ops read into sent_ so far
  int toStart_ = 0;  ///< first processes still to start (startNext)
  Clock::time_point lastEvent_ = Clock::now(); ///< the latest spawn, exit or phase
  /// Entries sent while a blocking read was in flight that its broker may hold for its whole wait (the
  /// embedded Kafka broker's Fetch): a process may see them only after then (Controller::readsHeldUntil).
  std::optional<Clock::time_point> readsHeldUntil_;
  /// Since when everything sent is acknowledged and every process idle (the settle phase), if it is.
  std::optional<Clock::time_point> settleSince_;
  std::map<int, Clock::time_point> execed_; ///< owner -> when its spawn returned (its start-up begins)
  Clock::time_point lastPoisonLook_{};      ///< poisonUnbounded's latest look at the history
};

} // namespace idem
