#pragma once
/// Internal: the typed history indexed once for the checkers and the diagnosis (sends, deliveries, acks,
/// kills, exits, spawns), beside the plan, initial and final records themselves.
#include "history/history.h"
#include "scenario/scenario.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace idem::detail {

struct SendRec {
  int64_t op = 0;
  std::string entry;
  int n = 0;
  std::string event_id;
  std::map<std::string, std::string> fields; ///< includes the id field and the seq field
  int phase = 1;
};

/// One entry a read step handed to a process (only reads whose reply reached it).
struct DeliveryRec {
  int64_t op = 0;
  std::string process;
  std::string label; ///< "XREADGROUP#2"
  std::string entry;
  int n = 0;         ///< event number, 0 when the entry is not one the producer sent
};

struct AckRec {
  int64_t op = 0;
  std::string process;
  std::string entry;
};

struct KillRec {
  int64_t op = 0;
  std::string process;
  std::string point; ///< the fault's text form
  int signal = 9;
};

struct ExitRec {
  int64_t op = 0;
  std::string process;
  std::optional<int> status;
  std::optional<int> signal;
  std::string by; ///< "harness" | "self" | "port-taken"
};

struct StepRec {
  int64_t op = 0;
  std::string process;
  std::string verb;
  std::string detail;
};

/// How the run ended, from the final op: what a missing effect can prove.
///  Settled  every entry delivered and acknowledged, every consumer idle: the state is final.
///  Stuck    entries left while every live consumer was idle (or kept re-reading them without
///           acknowledging), also after a restart: proven stuck; what is missing is missing for good.
///  Limit    the harness gave up (deadline, restart bound, a consumer silent while it held entries):
///           only effects that can't be undone by more time (a duplicate, a phantom) are proven.
using RunEnd = ops::RunEnd;

struct HistoryView {
  /// Indexes every op.
  HistoryView(const Scenario& s, const std::vector<Op>& ops);

  const Scenario& scenario;
  const std::vector<Op>& ops;
  const ops::Plan* plan = nullptr;
  const ops::Initial* initial = nullptr;
  const ops::Final* final = nullptr;
  std::vector<std::string> errors; ///< messages of "error" ops
  std::vector<SendRec> sends;
  std::vector<DeliveryRec> deliveries;
  std::vector<AckRec> acks;
  std::vector<AckRec> returns; ///< entries a process handed back for redelivery (Step::returned)
  /// Entries a Lua script most likely acknowledged: a script step that reached the server and got no error,
  /// of a script whose body (seen in the run's EVAL or SCRIPT LOAD of its SHA-1) calls XACK, called with the
  /// entry's id among its keys and arguments. Unseen by the proxy, so used to name an anti-pattern, never to
  /// judge (acked() reads the broker's end state for those).
  std::vector<AckRec> scriptAcks;
  /// A consumer deleted from its group while it held pending entries (XGROUP DELCONSUMER on Valkey): the
  /// broker drops them from the pending list unapplied, for good. Its entries are also in `acks` (settled
  /// at that step), as far as the deliveries tell them: those delivered to a process of that consumer
  /// name (its spawn's), neither acknowledged nor handed to another consumer since, and no more of them
  /// than the reply's count of pending entries it deleted.
  struct DeletedConsumer {
    int64_t op = 0;
    std::string process;  ///< who deleted it
    std::string consumer; ///< the consumer name deleted
    bool own = false;     ///< its deleter's own consumer name
    int pending = 0;      ///< the count the broker answered
    std::vector<std::string> entries;
  };
  std::vector<DeletedConsumer> deletedConsumers;
  std::vector<KillRec> kills;
  std::vector<ExitRec> exits;
  std::vector<StepRec> steps;
  std::vector<std::pair<const Op*, const ops::Opaque*>> opaque; ///< connections the proxy could not decode
  std::map<std::string, std::string> logs; ///< process -> log path (from spawn)
  std::map<int, std::map<std::string, std::string>> eventFields; ///< n -> fields of its first send
  std::map<std::string, int> entryEvent;   ///< entry id -> n

  /// How the run ended (requires the final op) and, for Limit, why ("c2 silent for 58 s holding 3 entries").
  RunEnd end() const;
  std::string endReason() const;

  /// The final record, or throws "no final op: the run did not finish".
  const ops::Final& requireFinal() const;
  /// The initial record, or throws.
  const ops::Initial& requireInitial() const;
  /// The plan record, or throws "no plan op".
  const ops::Plan& requirePlan() const;
  /// The sends of event n, in op order.
  std::vector<const SendRec*> sendsOf(int n) const;
  /// The deliveries of the entries of event n, in op order.
  std::vector<const DeliveryRec*> deliveriesOf(int n) const;
  /// The acknowledgements of the entries of event n, in op order.
  std::vector<const AckRec*> acksOf(int n) const;
  /// The scriptAcks of event n's entries.
  std::vector<const AckRec*> scriptAcksOf(int n) const;
  /// Those of `recs` that name an entry of event n.
  std::vector<const AckRec*> ofEvent(const std::vector<AckRec>& recs, int n) const;
  /// The first ack of `entry` by `process` with op index in (after, before); nullptr when none.
  const AckRec* ackBy(const std::string& process, const std::string& entry, int64_t after, int64_t before) const;
  /// The first kill of `process` after op `after`; nullptr when none.
  const KillRec* killAfter(const std::string& process, int64_t after) const;
  /// True when some process acknowledged an entry of event n, or the broker settled one by a delivery no
  /// process read (settledUnseen), or, with unseenSteps, an entry of it was delivered and is no longer
  /// pending at the end (a script acknowledged it).
  bool acked(int n) const;
  /// True when the final op lists an entry of event n as settled by a delivery no process read (a no-ack
  /// push on its way when its consumer was killed: gone from the broker, in no process's hands).
  bool settledUnseen(int n) const;
  /// The first entry of event n the final op lists so, "" when none.
  std::string settledUnseenEntry(int n) const;
  /// The kill that ended the connection such pushes were on their way over: the run's one kill when no other
  /// fault ended a connection (drop, error, restart); nullptr when which one did is not known.
  const KillRec* settledUnseenKill() const;
  /// How many times event n may have been handed to a consumer: per entry, the most of the recorded
  /// deliveries, the broker's delivery count of a pending entry, and 1 if it was acknowledged. A recorded
  /// delivery that its process handed back (a nack with requeue) before any step of its own to another
  /// server (the database: no work on it) is none: a consumer that returns what it cannot apply while
  /// PostgreSQL is down gets each entry again and again, and applied none of those.
  int opportunities(int n) const;
  /// Delivery d was handed back by its process (Step::returned), or its process's life ended, before that
  /// process sent any request but to the server that delivered it and PostgreSQL statements that apply
  /// nothing (BEGIN, ROLLBACK, a COMMIT answered ROLLBACK, a statement that never reached the server, or one
  /// that was undone()). Requests count by when they were sent, not when their reply was recorded.
  bool returnedUntouched(const DeliveryRec& d) const;
  /// The PostgreSQL statement at op `at` took no effect: one statement inside a transaction its connection
  /// opened with a plain BEGIN, which never committed (rolled back, its COMMIT answered ROLLBACK, or no COMMIT
  /// sent on that connection before its process's end). False whenever the steps leave any doubt.
  bool undone(int64_t at) const;
  /// The most times event n can have been applied: once per delivery (opportunities), plus one for each
  /// fault after which a live consumer may retry work it holds without a new delivery. A pass is proven
  /// only up to this bound (docs/verdicts.md).
  int cap(int n) const;
  /// Steps that may have read or settled the broker's entries unseen (scripts on Valkey, ops::Step::unseen)
  /// and reached the server.
  int unseenSteps = 0;
  /// Of those, the ones whose reply held what looks like an entry id (ops::Step::unseenEntries): each may
  /// have delivered an entry once more, so cap() counts one more for each.
  int unseenReads = 0;
  /// Faults that fired after which a live consumer may redo work without a new delivery (drop, delay,
  /// restart: plan/fault_kind.h applicationWeight).
  int retryFaults = 0;
  /// Faults other than kills that fired, in history order (its process: the one whose step it acted on).
  struct FaultRec {
    int64_t op = 0;
    std::string process;
    Fault fault;
  };
  std::vector<FaultRec> otherFaults;
  /// The `age` faults that fired, in history order, with what each did (docs/faults.md, "Dedup state that
  /// ages").
  struct AgeRec {
    int64_t op = 0;
    std::string fault; ///< its text form
    ops::Aged aged;
  };
  std::vector<AgeRec> ages;
  /// The producer retries of event n once simulated time passed for its dedup state (the `age` faults after
  /// its first delivery, else its first send). A retry's own age is the time simulated between the
  /// producer's first send of the event and the retry's send: `within` counts retries whose age is within the scenario's retry_window_ms (every one when it
  /// declares none), which must be deduplicated however late they are handled; `after` those past it, which
  /// may be applied again. `ageMs`: the time simulated for the state in all; `sentAtMs`: the oldest
  /// retry's age; `removed`: whether those ages removed dedup state (a key expired, a row pruned).
  struct LateRetries {
    int within = 0, after = 0;
    int64_t ageMs = 0, sentAtMs = 0;
    bool removed = false;
    std::vector<int64_t> ops; ///< the ages and the retries' sends
  };
  LateRetries lateRetries(int n) const;
  /// True when every entry of event n is listed as never delivered by the final op.
  bool neverDelivered(int n) const;
  /// A delivery of an entry of event n while a process it was delivered to before still held it: that
  /// process neither died nor exited since, did not acknowledge or hand the entry back, and no fault acted
  /// on it in between (a pause, a hold, a delay hand its work over on purpose) — the broker's redelivery
  /// timeout passed (ops::Plan::claimIdleRedelivers).
  struct HeldRedelivery {
    const DeliveryRec* again = nullptr;
    std::string holder;
  };
  std::vector<HeldRedelivery> redeliveredWhileHeld(int n) const;
  /// Events that a killed or crashed process was working on when it died: the unacknowledged entries
  /// delivered to it that its last steps mention (by the id field's value), else the first one.
  std::set<int> inProgressAtDeath() const;
};

/// The rows observed for `invariant` (`which`: "initial" or "final", for messages); throws when absent.
Rows observedRows(const Observed& observed, const std::string& invariant, const char* which);

/// "w1" for a row's first column; throws on NULL.
std::string rowKey(const Row& row, const std::string& invariant);

/// Distinct events by `field`: the events sharing one value of the field, ordered by first event.
struct Group {
  std::string value;
  std::vector<int> events;
  std::map<std::string, std::string> fields; ///< the first event's
};
std::vector<Group> distinctGroups(const HistoryView& h, const std::string& field);

} // namespace idem::detail
