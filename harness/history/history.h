#pragma once
/// The one append-only history of a schedule's execution. Everything that happened goes here, in the order
/// the harness saw it, as typed records: one struct per kind of event, defined here once, with one JSON
/// mapping each way (history_json.cc). Checkers, the report, the search and the commands read these records;
/// nothing else parses the JSON of an op.
///
/// The ops, in the JSON of report.json's "history" ({"index", "time_us", "type", "process", "value"}):
///
/// | type      | process          | value (the record below)                                                |
/// |-----------|------------------|--------------------------------------------------------------------------|
/// | `plan`    | harness          | the schedule, target, claim_idle_ms, stream, group, sink_policy,          |
/// |           |                  | claim_idle_redelivers (op 0)                                              |
/// | `initial` | harness          | observed: the rows of every invariant after reset, before any send       |
/// | `send`    | producer         | entry, n, event_id, fields, phase, retry                                  |
/// | `spawn`   | c1, c2, …, r1, … | pid, consumer, log, restart (first, new-name, same-name, after-exit, …)  |
/// | `step`    | c1, …            | server, conn, verb, k, detail, t_req_us, outcome, and what the reply said|
/// | `fault`   | c1, …            | a fault that fired (its text form), the signal a kill delivered, `aged`  |
/// | `exit`    | c1, …            | status or signal, by harness or self, ignored_sigterm                     |
/// | `note`    | any              | message: something a person should know (a kill that reached no process) |
/// | `opaque`  | c1, …            | server, conn, direction, offset, reason: bytes the proxy could not decode|
/// | `stall`   | harness          | pending, last_delivered, restart, reason: work left with nothing moving  |
/// | `escape`  | c1, …            | pid, command: a process the consumer started that outlived it (killed)   |
/// | `final`   | harness          | observed rows, pending and undelivered entries, how the run ended, dead letters, outbox_pending (a relay's unsent rows) |
/// | `error`   | harness          | message: the run could not be judged                                     |
/// | `request` | client           | HTTP: id, op, role, key, body, key_value, ref, wait, server              |
/// | `response`| client           | HTTP: id, outcome, status, location, digest, body, json_digest, size     |
/// | `call`    | sink             | a call the sink received: id, method, path, key, ref, digest, outcome, …  |
///
/// A step is recorded once, when it ends; its outcome is one of docs/steps.md ("How a step ends").
#include "plan/fault.h"
#include "plan/schedule.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace idem {

/// One observed row: text columns, SQL NULL as nullopt.
using Row = std::vector<std::optional<std::string>>;
using Rows = std::vector<Row>;
/// Invariant name -> the rows its `observed` query returned.
using Observed = std::map<std::string, Rows>;

namespace ops {

struct Plan {
  Schedule schedule;
  std::string target;
  int claimIdleMs = 0;
  std::string stream, group;
  /// A scenario with a sink: the provider's policy the run's sink follows, "honour" or "ignore" (keys); the
  /// scenario's own unless a command's --sink-policy overrode it. "" without a sink.
  std::string sinkPolicy = {};
  /// The broker delivers an entry again once a live consumer has held it unacknowledged for claimIdleMs
  /// (Broker::redeliversAfterClaimIdle): Valkey consumers claim it, NATS's AckWait.
  bool claimIdleRedelivers = false;
};

struct Initial {
  Observed observed;
};

struct Send {
  std::string entry;
  int n = 0;
  std::string eventId;
  std::map<std::string, std::string> fields;
  int phase = 1;
  bool retry = false;
  bool inflight = false; ///< sent while entries before it were in work (StreamEntry::inflight)
};

struct Spawn {
  int pid = 0;
  std::string consumer;
  std::string log;
  std::string restart; ///< first | new-name | same-name | after-exit | after-stall
};

/// An entry a read handed over.
struct Delivered {
  std::string entry;
  std::map<std::string, std::string> fields; ///< empty for an entry deleted while pending
};

/// How a step ended (docs/steps.md). Dropped*: a drop fault reset its connection; Answered: a fault
/// answered it in the server's place (the request was not forwarded).
enum class StepOutcome { Ok, KilledBefore, KilledAfter, Forwarded, Withheld, Unobserved, DroppedBefore, DroppedAfter,
                         Answered };
const char* toString(StepOutcome o); ///< "ok", "killed-before", ... (docs/steps.md)

struct Step {
  std::string server; ///< "pg" | "valkey"
  int conn = 0;       ///< the process's connection, 1-based
  std::string verb;
  int k = 0;          ///< occurrence of the verb in the run
  std::string detail; ///< the SQL or command line, abbreviated
  int64_t tReqUs = 0; ///< when the request was complete (µs since the history started)
  StepOutcome outcome = StepOutcome::Ok;
  bool error = false;     ///< the reply was an error
  std::string summary;    ///< "UPDATE 1", "+OK", "2 entries"
  bool blocking = false;  ///< a blocking read
  bool empty = false;     ///< a read that delivered nothing
  /// PostgreSQL: an extended-protocol group ended by Flush, not Sync (proxy::StepInfo::flushed): an error
  /// fault cannot stand in for its reply.
  bool flushed = false;
  /// Valkey: MULTI, a command queued after it, or DISCARD (proxy::StepInfo::inMulti): no error fault there.
  bool inMulti = false;
  /// Connection set-up (history/trace.h setUpCommand): counted apart, never a fault or release point.
  bool setUp = false;
  /// Sent once idemproof had begun to stop its process (SIGTERM at the run's end, or to replace it): its
  /// shutdown (a client's basic.cancel, a group's LeaveGroup, a last commit). Numbered as any step and
  /// judged as any, but never a fault point: the run is over, and a forget or restart there could not be
  /// carried out, nor its aftermath run.
  bool stopping = false;
  std::vector<std::string> tables;   ///< PostgreSQL: the tables its statements name (proxy/sql_verb.h sqlTables)
  std::vector<std::string> acked;    ///< XACK: the ids in the request
  /// Handed back for redelivery (an AMQP nack or reject with requeue, a NATS -NAK): the ids it names.
  std::vector<std::string> returned;
  /// Its `acked` entries are settled without being applied: the broker drops them (an AMQP nack or reject
  /// without requeue, a NATS +TERM).
  bool discards = false;
  /// Its error is one the broker answers while a group's membership changes (proxy::ReplyInfo::transient).
  bool transient = false;
  /// It may have read or settled the broker's entries unseen (a script on Valkey: proxy::StepInfo::unseen).
  bool unseen = false;
  /// Of such a step, its reply held what looks like an entry id: it may have handed entries to its process.
  bool unseenEntries = false;
  /// A Lua script on Valkey (proxy::StepInfo::script): its SHA-1; what its body calls, where the step
  /// carries it (EVAL, SCRIPT LOAD); its keys and arguments that look like entry ids.
  std::string script;
  std::vector<std::string> scriptCalls;
  std::vector<std::string> scriptIds;
  /// XGROUP DELCONSUMER (proxy::StepInfo::deletesConsumer): the consumer name it deletes.
  std::string deletesConsumer;
  std::vector<Delivered> delivered;  ///< reads: the entries the reply handed over
  /// XCLAIM or XAUTOCLAIM … JUSTID (proxy::ReplyInfo::claimedIds): the ids it claimed, fields not handed over.
  std::vector<std::string> claimedIds;
  /// XRANGE, XREVRANGE (proxy::ReplyInfo::ranged): the ids of the entries it returned, outside any group.
  std::vector<std::string> ranged;

  std::string name() const { return verb + "#" + std::to_string(k); } ///< "COMMIT#3"
  /// Its reply reached the process (ok).
  bool replied() const { return outcome == StepOutcome::Ok; }
  /// The server may have executed it: replied, killed or dropped after, or forwarded before a cut.
  bool reachedServer() const;
  /// `entry` is among what it delivered.
  bool delivers(const std::string& entry) const;
};

/// What an `age` fault did to the consumer's dedup state (docs/faults.md, "Dedup state that ages").
struct Aged {
  int64_t ms = 0;        ///< the simulated time that passed
  int64_t moved = 0;     ///< Valkey keys whose TTL was moved forward by `ms`
  int64_t expired = 0;   ///< Valkey keys whose TTL ran out: deleted
  bool keys = false;     ///< the broker holds the consumer's keys (Valkey), so moved/expired were counted
  std::string prune;     ///< the prune statement as run ($1 in place), "" when the scenario names none
  int64_t pruned = 0;    ///< the rows it deleted
  std::string skipped;   ///< why the prune did not run (no retention declared), "" when it ran or none
};

/// A fault that fired.
struct FaultOp {
  Fault fault;
  int signal = 0; ///< the signal a kill delivered
  std::optional<Aged> aged = {}; ///< an `age` fault: what it did
};

struct Exit {
  std::optional<int> status;
  std::optional<int> signal;
  std::string by; ///< "harness" | "self" | "port-taken" (an HTTP server that could not bind its PORT: another process had it)
  bool ignoredSigterm = false;
  /// "exit 0", "signal 9"
  std::string text() const;
};

struct Note {
  std::string message;

  /// What a process did after a restart of a server it used: "after the pg restart
  /// (restart:after:COMMIT#1:pg): c1 reconnected". `outcome` names the process first.
  static Note afterRestart(const std::string& server, const std::string& fault, const std::string& outcome);
  /// The outcome of a process that opened no connection after the restart: "c1 made no new connection".
  static std::string noNewConnection(const std::string& label);
  /// This note is afterRestart(…, noNewConnection(label)).
  bool saysNoNewConnection(const std::string& label) const;
  /// The connections a server process had opened as a server restarted: "s2 had opened 4 connections by the
  /// PostgreSQL restart (restart:after:SELECT#1:pg)". A pool may hand one out once more, dead.
  static Note openAtRestart(const std::string& label, int connections, const std::string& server, const std::string& fault);
  /// This note is openAtRestart(label, …, fault) with one connection or more.
  bool saysOpenAtRestart(const std::string& label, const std::string& fault) const;
};

struct Opaque {
  std::string server;
  int conn = 0;
  std::string direction; ///< "client" | "server"
  uint64_t offset = 0;
  std::string reason;
};

struct Stall {
  int64_t pending = 0;
  std::string lastDelivered;
  bool restart = false;
  std::string reason;
};

/// A process started by a consumer (its environment carries the run's mark) still alive after every
/// consumer process of the run was stopped: it left the consumer's process group (setsid, a daemon).
/// idemproof killed it; the target broke the contract (docs/target-contract.md).
struct Escape {
  int pid = 0;
  std::string command; ///< its command line, abbreviated
};

struct PendingEntry {
  std::string entry;
  std::string consumer;
  int64_t idleMs = 0;
  int deliveries = 0;
};

/// One message found in a scenario's dead-letter destination at the end of the run (poison events).
struct DeadLetter {
  std::string id;      ///< the stream entry's id; for a table, the row's position (1, 2, …)
  std::optional<std::string> eventId; ///< the declared id field or column (nullopt: absent or NULL)
};

/// How the run ended (docs/verdicts.md): settled, stuck (proven), or at a limit of the harness.
enum class RunEnd { Settled, Stuck, Limit };
const char* toString(RunEnd e); ///< "settled" | "stuck" | "limit"

struct Final {
  Observed observed;
  std::vector<PendingEntry> pending;
  std::vector<std::string> undelivered;
  /// Entries the broker settled by a delivery no tracker read (brokers::Leftover::settledUnseen).
  std::vector<std::string> settledUnseen = {};
  std::vector<std::string> stream;
  std::string lastDelivered;
  RunEnd end = RunEnd::Settled;
  std::string limit;  ///< deadline | restart-bound | start-timeout (end == Limit)
  std::string reason; ///< why it ended so, for people
  /// A scenario with poison events: where its dead letters go ("stream wallet-1.dlq", "table dead_letters")
  /// and what that held at the end; "" without poison.
  std::string deadLetterWhere = {};
  std::vector<DeadLetter> deadLetters = {};
  /// A target with an outbox relay: the unsent outbox rows its "outbox.pending" query counted at the end
  /// (0 for a settled run); nullopt without a relay.
  std::optional<int64_t> outboxPending = std::nullopt;
};

struct Error {
  std::string message;
};

/// HTTP scenarios: a request the client wrote to the server (plan/client_op.h). Recorded when written.
struct Request {
  int id = 0;          ///< 1, 2, … in the order written (r1, r2, …)
  int op = 0;          ///< the schedule's client op it belongs to (1-based); 0: the client's own retry at the end
  /// original (a key's first request), retry (its key and payload again), mismatch (its key, another
  /// payload), no-key, bad-key, settle (the client retrying a key with no final answer, at the end)
  std::string role;
  int key = 0;         ///< the event whose key it sends (0: none)
  int body = 0;        ///< the event whose payload it sends
  bool keyHeader = true; ///< the key header was sent
  std::string keyValue;  ///< the header's value as sent
  std::string ref;       ///< the payload's reference (its uuid field)
  std::string wait;      ///< ClientOp::Wait ("answer", "timeout", "cut-after-request", …)
  std::string server;    ///< the server process it went to ("s1")
  int burst = 0;         ///< in a burst: its copy number (1-based), else 0
  bool afterRetention = false; ///< written once the declared retention had passed since the key's last request
  int64_t agedMs = 0;          ///< written once this many ms had passed since the key's last request (0: at once)
  bool reordered = false;      ///< its payload's fields in reverse order (the same values)
};

/// How a request ended for the client.
///  answered  the client read the whole answer
///  late      the whole answer, read after the client had given up on it (a timeout: it was held)
///  cut       the client closed the connection on purpose (status/location known when the headers came)
///  reset     the connection closed without an answer (the server was killed, or closed it)
///  refused   no server accepted the connection
///  too-large the body went on past what the client reads of an answer (kAnswerLimit): no whole answer
///  timeout   at the end, no answer came within the declared lease and 5 s more, with no fault meanwhile:
///            the client gave up and closed the connection (a server that holds the request for good)
/// Interim 1xx answers are read past: `status` is the final answer's.
inline constexpr uint64_t kAnswerLimit = 64ull << 20;
struct Response {
  int id = 0;
  std::string outcome;
  int status = 0;       ///< 0 when no status line arrived
  std::string location; ///< the Location header ("" when absent)
  std::string digest;   ///< FNV-1a 64 of the whole body, 16 hex digits ("" without a body)
  std::string body;     ///< the body, at most 4 KiB of it
  /// FNV-1a 64 of the body as canonical JSON (keys sorted): an answer that said it is JSON, read whole
  /// (at most 256 KiB) and parsed; "" otherwise.
  std::string jsonDigest = {};
  std::string contentType = {}; ///< the Content-Type header ("" when absent)
  uint64_t size = 0;            ///< the bytes of the body read
  bool final() const { return outcome == "answered" || outcome == "late"; }
};

/// A call the sink received (docs/sink.md): idemproof answers a consumer's external call (a payment provider's
/// charge) in the provider's place, under the scenario's policy. Recorded by the sink when it decides, before
/// its answer leaves: a call it executed is recorded even when the answer never reaches the consumer.
struct Call {
  int id = 0;              ///< 1, 2, … in the order the sink received them
  std::string method, path;
  bool keyHeader = false;  ///< the key header was sent
  std::string key;         ///< its value
  std::string ref;         ///< the body's reference member (the event's id); "" when absent or not JSON
  std::string digest;      ///< FNV-1a 64 of the body, 16 hex digits
  /// executed   the provider's effect happened (a charge was made)
  /// replayed   a key's first answer sent again: no effect (the provider honours keys)
  /// mismatch   a used key with another payload: refused, no effect
  /// rejected   not the declared call (another method or path), or a body without the reference: no effect
  std::string outcome;
  int status = 0;          ///< the answer's status
  /// executed: its number among the run's executions (1, 2, …); replayed: the execution it replays; else 0
  int execution = 0;
  bool executed() const { return outcome == "executed"; }
};

} // namespace ops

using Record = std::variant<ops::Plan, ops::Initial, ops::Send, ops::Spawn, ops::Step, ops::FaultOp, ops::Exit,
                            ops::Note, ops::Opaque, ops::Stall, ops::Escape, ops::Final, ops::Error, ops::Request,
                            ops::Response, ops::Call>;

/// The op type of a record: "plan", "step", ... (the table above).
const char* typeOf(const Record& r);

struct Op {
  int64_t index = 0;   ///< position in the history, 0-based
  int64_t time_us = 0; ///< microseconds since the history started
  std::string process;
  Record record;

  const char* type() const { return typeOf(record); }
  /// The record if it is a T, else nullptr.
  template <class T>
  const T* as() const {
    return std::get_if<T>(&record);
  }
};

/// {"index", "time_us", "type", "process", "value"}; from_json throws std::runtime_error naming the op's
/// index and type and the member that is missing or malformed.
void to_json(nlohmann::json& j, const Op& op);
void from_json(const nlohmann::json& j, Op& op);

/// Append-only and thread-safe (proxies append from their I/O thread).
class History {
public:
  History();
  History(const History& o);
  History& operator=(const History& o);
  /// Appends an op stamped with the current time; returns its index.
  int64_t append(std::string process, Record record);
  /// A copy of every op so far, in order.
  std::vector<Op> ops() const;
  /// How many ops there are: the index the next one gets.
  size_t size() const;
  /// A copy of the ops from index `from` on (none when there are no more): what came since a look before.
  std::vector<Op> opsFrom(size_t from) const;
  nlohmann::json toJson() const;
  static History fromJson(const nlohmann::json& j);
  int64_t nowUs() const;

private:
  mutable std::mutex mu_;
  std::vector<Op> ops_;
  std::chrono::steady_clock::time_point start_;
};

/// The ops of `history` holding a T, in order.
template <class T>
std::vector<std::pair<const Op*, const T*>> recordsOf(const std::vector<Op>& history) {
  std::vector<std::pair<const Op*, const T*>> out;
  for (const auto& op : history)
    if (const T* r = op.as<T>()) out.emplace_back(&op, r);
  return out;
}

} // namespace idem
