#pragma once
/// Fault kinds: each one a small class in plan/faults/, registered in plan/faults/registry.cc. A kind
/// checks its arguments and says what it does to its step as an Effect, a value the proxies carry out
/// (supervisor/controller.cc). Adding a kind is one file and one line of registration; nothing else
/// changes: schedules, replay files and reports carry every fault in its text form (fault.h).
#include "plan/fault.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace idem {

/// What a fault does to its step. `before` faults act on the request, `after` faults on its reply (the
/// request has reached the server and taken effect).
struct Effect {
  enum class Action {
    Kill,  ///< SIGKILL the consumer's process group; the request (before) or reply (after) is withheld
    Drop,  ///< reset the connection (both sides); the process lives and sees a connection error
    Delay, ///< hold the request (before) or the reply (after) for `time`, then let it through
    Error, ///< answer the request with a server error (`code`, `message`) instead of its result
    Forget, ///< the broker forgets deliveries and acknowledgements (a failover to a lagging replica): the
            ///< harness moves the group's last-delivered id back to the start of the stream, while the step
            ///< waits, so every entry sent so far is delivered again
    Restart, ///< the harness restarts the server named by `server` while the step waits (every process's
             ///< connections to it drop; the processes live on)
    Hold,    ///< hold the request (before) or reply (after) until `until` (another process reaches a point),
             ///< or for `time`, or until every other process is idle; never longer than the run allows
    Age,     ///< simulated time (`time`; 0: the scenario's retry window) passes for the dedup state: the
             ///< harness runs Valkey TTLs down and the scenario's prune while the step waits
    Join,    ///< a new consumer process joins the group while the step waits, until the newcomer has read
             ///< from the broker and is idle (so the group has rebalanced around the waiting process), or a
             ///< hold's bounds release it
    Pause,   ///< SIGSTOP the process's group and withhold the request (before) or reply (after); after `time`
             ///< (0: the broker's hand-over time, Broker::pauseMs), when another process reaches `until`, or
             ///< by a hold's bounds, SIGCONT the group and let the step go on
  };
  Action action = Action::Kill;
  std::chrono::milliseconds time{0};
  std::string code;
  std::string message;
  /// Error: the server the error belongs to ("pg" or "valkey"); at a step of the other server the fault
  /// does not fire (a note says so). Restart: the server to restart.
  std::string server;
  /// Error: the server ends the session with it (PostgreSQL FATAL, e.g. 57P01 admin_shutdown): the
  /// connection closes after the reply.
  bool fatal = false;
  /// Hold, Pause: the point of another process that releases it ("c2:after:XACK#1"), empty when none.
  std::string until = {};
};

/// A kind's class in a comparison's matrix (compare, demo): one column per id.
struct FaultClass {
  std::string id;          ///< "drop:after"
  std::string label;       ///< "drop after a step (ambiguous)"
  std::string description; ///< what the class's faults do
};

class FaultKind {
public:
  virtual ~FaultKind() = default;
  /// The KIND of the text form: "kill", "drop", ...
  virtual std::string name() const = 0;
  /// One line for usage messages: "drop:before|after:VERB#k  reset the connection ...".
  virtual std::string usage() const = 0;
  /// Throws UsageError naming `what` when `f`'s arguments are not this kind's (count, range).
  virtual void check(const Fault& f, const std::string& what) const = 0;
  /// What `f` does to its step.
  virtual Effect effect(const Fault& f) const = 0;
  /// How many more times a fault of this kind may let an event be applied: 1 by default (a kill, an
  /// error, a forget: one more delivery); 2 when a live consumer may also redo what it holds without a
  /// new delivery (a drop, a delay, a restart). Decodable amounts and the checkers' bound both use it.
  virtual int weight() const { return 1; }
  /// Whether the kind acts at a step (VERB#k): check draws it and sweep sweeps it (--faults). False for a
  /// kind that acts at a time (timekill), which runs only when a schedule names it.
  virtual bool atStep() const { return true; }
  /// Whether an HTTP run carries it out at a step of its server whatever its replicas (no stream): kill,
  /// drop, delay, error, restart and pause do; a kind that needs a stream (forget, age, rebalance) does not,
  /// and is refused for HTTP scenarios before any server starts. A hold needs a second process: it is
  /// accepted with two replicas or more (requireHttpFaultKind).
  virtual bool atHttpServer() const { return false; }
  /// Where a sweep applies the kind: the fault it makes at a swept point (`point`, a kill point at a step of
  /// server `server`), or nullopt where it does not act. `delayMs`: the sweep's delay.
  virtual std::optional<Fault> sweptAt(const Fault& point, const std::string& server, int delayMs) const {
    (void)point, (void)server, (void)delayMs;
    return std::nullopt;
  }
  /// Its clause in a story, for a fault that reached `process`: "c1's connection dropped at
  /// drop:after:COMMIT#1". `title` names a server for people ("pg" -> "PostgreSQL").
  virtual std::string phrase(const Fault& f, const std::string& process,
                             const std::function<std::string(const std::string&)>& title) const {
    (void)title;
    return f.str() + " at " + process;
  }
  /// Whether the process it reaches lives on with an aftermath (a connection cut, an error it was told, a
  /// wait past its own timeout): exiting then is handling it, not a crash. Not so for a fault that acts on
  /// the broker or the group (forget, rebalance): the process itself was told nothing.
  virtual bool leavesAftermath() const { return true; }
  /// What the broker must have for the kind ("rebalance": a consumer group whose members share the stream's
  /// partitions); empty when every broker can. Asking for it on a broker that has not is a usage error.
  virtual std::string brokerFeature() const { return {}; }
  /// Whether check draws it when --faults does not name the kinds. A kind that costs seconds a schedule or
  /// whose every point is not yet judged in time says no: it runs when asked for.
  virtual bool drawnByDefault() const { return true; }
  /// Whether what it does shows only in a producer retry sent after it (age: the retry of an event whose
  /// dedup state aged): a comparison places it at the last point of the trace and adds such a retry.
  virtual bool judgedByLateRetry() const { return false; }
  /// The class of fault `f` (of this kind, as sweptAt made it) in a comparison's matrix.
  virtual FaultClass sweepClass(const Fault& f) const { return {f.kind, f.kind, f.kind + " faults"}; }
  /// How many consumers run the schedules of its class in a comparison: one; a kind whose harm needs another
  /// consumer to take over (pause) also two, the fault then on c1 (which does the single consumer's work).
  virtual std::vector<int> comparedConsumers() const { return {1}; }
};

/// The longest time an `age` fault simulates, and the longest retry window a scenario declares: a year.
inline constexpr int64_t kMaxAgeMs = 366LL * 24 * 3600 * 1000;

/// FaultKind::weight of `f`'s kind, for choosing decodable amounts (scenario/decodable.h); the checkers'
/// bound (HistoryView::cap) counts the same way.
int applicationWeight(const Fault& f);
/// Σ applicationWeight over `faults`.
int applicationWeight(const std::vector<Fault>& faults);

/// A timekill's time after its process's spawn, to the microsecond (`timekill:c1:after:SPAWN#1:35.125`);
/// `f` is a checked timekill.
std::chrono::microseconds timeKillDelay(const Fault& f);

/// The error an `error` fault without a code answers at a step of `server` with `verb` ("valkey": LOADING;
/// "sink": 503 before the call, 500 after it; "pg": 40001 serialization_failure at a statement on data, and
/// where PostgreSQL can fail only by ending the session — a new connection (CONNECT: 53300), a statement that
/// only opens or ends a transaction or sets the session, naming no table (BEGIN, ROLLBACK, SET, …: 57P01), and
/// an extended-protocol round trip of Close or Sync messages alone (CLOSE, SYNC: 57P01). A SELECT naming no
/// table, given its text `sql`: 40P01 at a blocking advisory lock call (pg_advisory_lock,
/// pg_advisory_xact_lock), 57P01 at one that waits on nothing and reads nothing (pg_try_advisory_*,
/// pg_advisory_unlock*) or calls no function (`SELECT 1`), 40001 at any other call.
Effect defaultError(const std::string& server, When when = When::Before, const std::string& verb = "",
                    bool namesTables = true, const std::string& sql = "");
/// The error effect of the code `code` of the error table (docs/faults.md); throws std::logic_error for a
/// code the table does not have.
Effect errorEffect(const std::string& code);

/// The kind named `name`; throws UsageError naming `what` and listing the kinds when there is none.
const FaultKind& faultKind(const std::string& name, const std::string& what);

/// The kinds an HTTP run carries out (FaultKind::atHttpServer), in registration order.
std::vector<std::string> httpFaultKinds();
/// Throws UsageError "<what>: ..." when kind `kind` is not one an HTTP run with `replicas` server replicas
/// carries out, naming those it does: a hold needs two replicas or more.
void requireHttpFaultKind(const std::string& kind, const std::string& what, int replicas = 1);
/// requireHttpFaultKind of `f`'s kind, its processes (server labels sN only) and its arguments: with one
/// replica a pause of the server ends at a time (there is no other process whose point could end it).
void requireHttpFault(const Fault& f, const std::string& what, int replicas = 1);
/// How long an HTTP server stays stopped at a pause that names no time: long enough for the client's
/// request, and the server's PostgreSQL session, to wait on a process that runs nothing.
inline constexpr int64_t kHttpPauseMs = 500;
/// How much longer than an HTTP scenario's declared lease_ms a delay drawn (or swept) past the lease lasts:
/// long enough for the client's retry to take the expired lease and finish before the delayed step goes on.
inline constexpr int64_t kPastLeaseMs = 500;
/// Every registered kind's name, in registration order.
std::vector<std::string> faultKinds();
/// The kinds that act at a step (FaultKind::atStep), in registration order: what --faults may name.
std::vector<std::string> stepFaultKinds();
/// Registers a kind (built-ins: plan/faults/registry.cc; tests may add their own). A name registered
/// twice replaces the earlier kind.
void registerFaultKind(std::unique_ptr<FaultKind> kind);

} // namespace idem
