#pragma once
/// The run's side of the proxies: counts steps by verb over the whole run (COMMIT#3 is the third COMMIT any
/// consumer sent), records every step in the history, and carries out the schedule's faults at their
/// steps on the proxies' I/O thread, before any other byte moves: each fault's Effect (plan/fault_kind.h)
/// becomes a Decision of the proxy (kill: SIGKILL the owner's process group; drop; delay; answer an error).
/// It also keeps what the supervisor needs to tell a busy consumer from an idle one.
#include "history/history.h"
#include "plan/fault.h"
#include "proxy/hub.h"
#include "supervisor/liveness.h"

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace idem {

/// Stops and wakes the process group of a consumer process (a pause: SIGSTOP, then SIGCONT); the
/// supervisor's TargetProcesses keeps the groups. Called from the proxies' thread and the supervisor's.
class GroupSignals {
public:
  virtual ~GroupSignals() = default;
  /// SIGSTOPs `owner`'s group: 0, or the errno of killpg (ESRCH when it has no process group).
  virtual int stopGroup(int owner) = 0;
  /// SIGCONTs `owner`'s group if it is stopped; nothing otherwise. Returns whether it was stopped.
  virtual bool continueGroup(int owner) = 0;
};

class Controller : public proxy::StepListener {
public:
  using Clock = std::chrono::steady_clock;

  Controller(History& history, std::vector<Fault> faults);
  void setHub(proxy::Hub* hub) { hub_ = hub; }
  /// Who stops and wakes the process groups for a pause; without one a pause reaches no process.
  void setSignals(GroupSignals* signals) { signals_ = signals; }

  /// Registers a consumer process: its owner id in the hub, its name and its process group.
  void addProcess(int owner, std::string name);
  void setPid(int owner, pid_t pgid);
  /// An HTTP server's start-up: until it is ready (it answers its health check), its steps are set-up
  /// (numbered apart, never a fault point nor a hold's release point), as a client's connection set-up is.
  /// A framework's check of its migrations before it listens is no step of the key's logic, and a fault
  /// there would only stop the server from ever serving.
  void setStarting(int owner, bool starting);
  /// Idemproof is stopping the process (SIGTERM): its steps from now on are its shutdown (ops::Step::stopping),
  /// numbered and judged as any, never a fault point.
  void setStopping(int owner);
  /// Holds every request of `owner` that arrives before `until`, at the proxy, until then (noted once with
  /// `why`): a replacement of a killed consumer starts at once, and its first look at the stream still comes
  /// only once the dead one's entries are claimable — the time passes while it starts instead of before.
  void holdRequestsUntil(int owner, Clock::time_point until, std::string why);

  /// CONNECT#k, the k-th PostgreSQL connection of the run: a fault there refuses it (an error: FATAL, e.g.
  /// 53300 too_many_connections), resets it (drop) or kills the process.
  proxy::Decision onConnect(int owner, proxy::Server server, int conn) override;
  proxy::Decision onRequest(int owner, proxy::Server server, int conn, const proxy::StepInfo& step,
                            proxy::StepToken& token) override;
  proxy::Decision onReply(int owner, const proxy::StepToken& token, const proxy::ReplyInfo& reply) override;
  void onReleased(int owner, const proxy::StepToken& token) override;
  void onCut(int owner, const proxy::StepToken& token, proxy::CutKind how) override;
  void onReturnedAtEnd(int owner, const std::vector<std::string>& entries) override;
  void onOpaque(int owner, proxy::Server server, int conn, const char* direction, uint64_t offset,
                const std::string& reason) override;

  /// What the supervisor needs to know about a process, read from any thread.
  struct ProcessState {
    bool killed = false;           ///< a kill fault reached it: its connections are cut, it must be replaced
    std::string killPoint;         ///< the kill that fired on it ("" when the signal reached no process)
    int steps = 0;                 ///< requests seen (completed or not)
    int inflight = 0;              ///< requests without a reply yet
    /// Of which blocking reads and keep-alives (a Kafka Heartbeat, which Sarama sends behind its blocking
    /// Fetch on one connection): requests whose reply the process does not wait on to go on with its work.
    int inflightBlocking = 0;
    int inflightKeepAlive = 0;     ///< of which keep-alives
    std::string waitingFor;        ///< the oldest request in flight neither blocking nor a keep-alive: "COMMIT#3 (pg)"
    Clock::time_point waitingSince;
    bool lastWasEmptyRead = false; ///< its latest step is a read that delivered nothing, and none is in flight
    /// Its broker pushes it entries (ReplyInfo::waiting, an AMQP consumer): at rest whenever it holds none.
    bool waiting = false;
    /// Its latest step ended with its connection cut under it (a drop, a server restart, a server that
    /// closed it) and it has made no request since: "XREADGROUP#2 (valkey)", else "".
    std::string cutAt;
    /// Entries delivered to it that no process has acknowledged since (an acknowledgement by any process
    /// settles the entry for the group: it is then no one's work).
    std::set<std::string> held;
    /// Of `held`, those it handed back (an AMQP nack or reject with requeue, a NATS -NAK) and was not handed
    /// again since: no work of its own, though the broker has not settled them yet.
    std::set<std::string> returned;
    bool gotEntries = false;       ///< a read has delivered entries to it
    /// Its broker settled entries as it delivered them to it (RabbitMQ's no-ack): held by no one, they may
    /// still be its work in memory, which no acknowledgement will tell the end of.
    bool settledOnDelivery = false;
    /// Its latest request of work (no read, no keep-alive) or delivery its broker settled at once.
    Clock::time_point lastWorkAt;
    /// Entries a read handed to it again while it already held them, and how often (it re-reads what it
    /// does not finish: three times or more is a spin).
    std::map<std::string, int> handedAgain;
    std::map<std::string, Clock::time_point> handedAgainSince; ///< when each was first handed to it again
    /// The first fault other than a kill or a forget that reached it ("drop:after:COMMIT#2"): it lives on
    /// with the aftermath (a dead connection, an error it was told) and must recover by itself.
    std::string faulted;
    Clock::time_point lastActivity; ///< its latest request or reply
    /// Its latest read that does not block (XAUTOCLAIM, XCLAIM, a read without BLOCK): where a consumer
    /// claims what others hold.
    std::optional<Clock::time_point> lastPoll;
    Clock::time_point spawned;
    std::optional<Clock::time_point> firstRequest; ///< its first request (start-up: spawned to this)
    std::optional<Clock::time_point> holdUntil;    ///< holdRequestsUntil: its requests wait until then
    /// By verb, the requests the server refused since the verb last succeeded, and the latest refusal ("406
    /// PRECONDITION_FAILED …"): a request refused again and again (a queue declared with other arguments
    /// than the broker's, a group that does not exist) is no work a longer deadline lets finish.
    std::map<std::string, std::pair<int, std::string>> refused;
    /// The entries it holds as work of its own: `held` but those it handed back.
    size_t holding() const { return held.size() - returned.size(); }
  };
  ProcessState state(int owner) const;
  /// Until when the broker may hold a blocking read in flight now, of any process, for its whole wait
  /// though entries arrive meanwhile (StepInfo::waitMs: the embedded Kafka broker's Fetch): the latest
  /// send + wait of such a read; nullopt when none is in flight.
  std::optional<Clock::time_point> readsHeldUntil() const;
  /// What the run-ending rule sees of the process (supervisor/liveness.h).
  liveness::Process livenessOf(int owner) const;
  /// A fault the supervisor carries out on a server while its step waits (forget: the broker goes back;
  /// restart: a server restarts).
  struct ServerAction {
    Fault fault;
    std::string process;
    proxy::StepToken token; ///< the held step: released by serverActionDone
  };
  /// The server actions due, oldest first; each must end with serverActionDone.
  std::vector<ServerAction> takeServerActions();
  /// Records the action's fault (with what an `age` did) and lets its step go on.
  void serverActionDone(const ServerAction& a, std::optional<ops::Aged> aged = std::nullopt);
  /// A hold fault that is holding a step now.
  struct ActiveHold {
    proxy::StepToken token;
    Fault fault;
    std::string process; ///< the held process ("c1")
    std::optional<Fault> until; ///< the releasing point (c2:after:XACK#1, a kill's text form), if any
    Clock::time_point since;
    /// A rebalance: the held process is out of the group (its requests to the broker wait with its step),
    /// the supervisor starts a consumer that joins the group, and releases the step, and with it the
    /// process's broker requests, once the newcomer has read from the broker and is idle.
    bool join = false;
    int owner = 0; ///< the held process's
    /// A pause: the held process's group is stopped (SIGSTOP) until the release, which wakes it (SIGCONT)
    /// before the step goes on; released at `Effect::time` (the supervisor's clock) or as a hold.
    bool pause = false;
  };
  std::vector<ActiveHold> activeHolds() const;
  /// Releases a hold now (the supervisor found it can't be met, or waited long enough), noting `why`.
  void releaseHold(int64_t token, const std::string& why);
  /// HTTP schedules: from now on, holds the requests of `verb` (any process) before the server sees them,
  /// at most `count` of them (-1: every one) until openGate — how the client keeps a request in flight past
  /// its timeout, or lines a burst up at a barrier. Each held step is noted with `why`. The first `skip`
  /// requests of `verb` from now on pass: the gate holds the (skip+1)-th (a timeout's learned hold point,
  /// http_hold.h).
  void gate(const std::string& verb, int count, std::string why, int skip = 0);
  /// Steps the gate holds now (not ended by a reply or a cut).
  int gated() const;
  /// Disarms the gate and releases every step it holds, noting `why` when it held any.
  void openGate(const std::string& why);
  /// Steps in flight over every process (requests without a reply).
  int inflightAll() const;
  /// Of those, the steps a delay fault holds (its request or its reply withheld for the fault's time, or let
  /// through and not answered yet): an HTTP client's timed-out request is then in flight at the server.
  int delayed() const;
  /// A delay fault withholds a step's request or reply right now (its time not over, the step not ended):
  /// the process waits on the harness.
  bool delaying() const;
  /// The activity counter (a step, a reply, a fault): compare to tell whether anything moved.
  uint64_t activity() const;

  /// Faults not fired yet.
  std::vector<Fault> pendingFaults() const;
  /// The last time any process did work: a request other than a read, or a read that handed it entries it did
  /// not hold yet (entries handed back to the process that holds them are no work: a claim loop, a spin).
  Clock::time_point lastWork() const;
  /// Whether every one of `entries` came through a proxy in some reply (a delivery, to any process). The
  /// broker may count an entry delivered while its reply is still on its way to the proxy.
  bool seenDelivered(const std::vector<std::string>& entries) const;
  /// Waits until the activity counter differs from `seen` (a step, a fault) or the timeout passes;
  /// returns the counter.
  uint64_t waitForActivity(uint64_t seen, std::chrono::milliseconds timeout);

private:
  /// A step's point in reasons and cut marks: "XREADGROUP#2 (valkey)".
  static std::string pointText(const std::string& verb, int k, const std::string& server);
  struct Inflight {
    int owner = 0;
    proxy::Server server = proxy::Server::Pg;
    int conn = 0;
    proxy::StepInfo step;
    int k = 0;
    int64_t t_req_us = 0;
    Clock::time_point sent;
    int pk = 0;            ///< occurrence of the verb within its process (cN:VERB#pk)
    bool answered = false; ///< an error fault: the server runs idemproof's stand-in instead (Decision::Replace)
    std::string replyStandIn; ///< what the client gets instead of the stand-in's reply ("" : the reply itself)
    bool setUp = false;       ///< connection set-up (history/trace.h setUpCommand): numbered apart, never a fault point
    bool stopping = false;    ///< sent while idemproof stops its process (setStopping): never a fault point
  };
  /// The fault at (when, verb, k) of the run, or at (when, process, verb, pk) of the process, if the
  /// schedule has it and it has not fired yet; removes it.
  std::optional<Fault> takeFault(When when, const std::string& verb, int k, const std::string& process, int pk);
  /// Carries out `fault` at step `step` (its record, outcome still to set): returns the proxy's decision and
  /// records the step, the fault, or a note when a kill reached no process.
  proxy::Decision fire(std::unique_lock<std::mutex>& lock, int owner, const Fault& fault, ops::Step step,
                       proxy::Server server, const proxy::StepToken& token, bool flushed);
  /// SIGKILLs the owner's process group; the errno of killpg, ESRCH when it has no process id yet.
  int killGroup(std::unique_lock<std::mutex>& lock, int owner);
  ops::Step stepOf(const Inflight& f) const;
  /// Ends a step in flight (reply, cut): the owner's counters and what it waits for.
  void endInflight(int owner, ProcessState& st, const Inflight& f);
  /// Ends step `token` of `owner`, in flight or held, as a cut `how` ended it: records it; returns the holds
  /// this releases. False (nothing done) when it is not in flight.
  bool cutStep(int owner, int64_t token, proxy::CutKind how, std::vector<proxy::StepToken>& released);
  /// At a kill of `owner` at step `token`: ends its other steps in flight as the cut that follows will
  /// (Hub::cutKind), so that the history has each before the kill.
  void cutOthers(int owner, const proxy::StepToken& token);
  /// Its reply reached the process: what it delivered is in its hands; records it ok. Returns the holds
  /// this releases (reached).
  std::vector<proxy::StepToken> replied(int owner, ops::Step step, const proxy::ReplyInfo& reply, int pk,
                                        bool keepAlive);
  /// The held step `token` ended (replied, cut): its hold is over.
  void holdEnded(int64_t token);
  /// A pause's release: SIGCONT to the paused group before its step goes on (nothing for a hold).
  void wake(const ActiveHold& h);
  GroupSignals* signals_ = nullptr;

  History& history_;
  proxy::Hub* hub_ = nullptr;
  /// "pg", or the broker's name (the hub's; "valkey" without one).
  const std::string& serverName(proxy::Server s) const;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable pidCv_;
  uint64_t activity_ = 0;
  std::vector<Fault> faults_;         // not fired yet
  std::map<std::string, int> counts_; // verb -> occurrences so far
  std::map<std::pair<std::string, std::string>, int> processCounts_; // (process, verb) -> occurrences so far
  std::set<int> starting_;            // owners in their start-up (setStarting)
  std::set<int> stopping_;            // owners idemproof is stopping (setStopping)
  std::map<int64_t, Inflight> inflight_;
  /// Replies held by a delay fault, until the proxy lets them through.
  struct HeldReply {
    Inflight f;
    ops::Step step;
    proxy::ReplyInfo reply;
  };
  std::map<int64_t, HeldReply> heldReplies_;
  std::vector<ServerAction> serverActions_;
  std::string replyStandIn_; ///< set by fire() for the step onRequest is deciding (a failed COMMIT's reply)
  std::vector<ActiveHold> holds_;
  /// Processes out of their group at a rebalance's step -> their requests to the broker held meanwhile.
  std::map<int, std::vector<proxy::StepToken>> outOfGroup_;
  std::map<std::pair<std::string, std::string>, int> processReplies_; ///< (process, verb) -> steps ended
  /// Holds whose releasing point `process` has now reached (`when` Before: its request of verb#k was seen;
  /// After: it ended); removes them, notes the release, and returns their tokens (release after unlocking).
  std::vector<proxy::StepToken> reached(const std::string& process, When when, const std::string& verb, int k);
  /// Releases `tokens` on the hub (call without the lock).
  void releaseTokens(const std::vector<proxy::StepToken>& tokens);
  int64_t nextToken_ = 1;
  std::string gateVerb_;          ///< "" when the gate is open
  int gateLeft_ = 0;              ///< how many more it holds (-1: no bound)
  /// Steps a delay fault held: token -> when its delay ends (delayed() counts those not ended, delaying()
  /// those whose delay is not over either).
  std::map<int64_t, Clock::time_point> delayed_;
  /// The step of `token` has not ended: in flight, or its reply held (caller holds mu_).
  bool stepOpen(int64_t token) const;
  int gateSkip_ = 0;              ///< how many more requests of its verb pass before it holds
  std::string gateWhy_;
  std::vector<int64_t> gateHeld_; ///< tokens it holds
  /// (owner, server, conn) -> the connection carried a command that is not set-up (history/trace.h).
  std::map<std::tuple<int, int, int>, bool> connectionWorked_;
  std::map<int, std::string> names_;
  std::map<int, pid_t> pids_;
  std::map<int, ProcessState> states_;
  /// holdRequestsUntil: why, and whether its first held request is noted yet (owner -> ...).
  struct RequestHold {
    std::string why;
    bool noted = false;
  };
  std::map<int, RequestHold> requestHolds_;
  Clock::time_point lastWork_ = Clock::now();
  std::set<std::string> seenDelivered_; ///< every entry a reply has delivered (seenDelivered)
  /// Entries whose acknowledgement reached the broker (the step forwarded, and answered without an error)
  /// since the last server action that can undo one (a forget, a restart). A later delivery of one is a
  /// copy the broker settles by itself — a JetStream redelivery sent before the server read the ack that
  /// settles it: recorded, but no one's work to hold.
  std::set<std::string> ackedAtBroker_;
  /// Entry `id` is acknowledged for the group: no process holds it any more (caller holds mu_).
  void settledForGroup(const std::string& id);
};

} // namespace idem
