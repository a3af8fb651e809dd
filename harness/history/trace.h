#pragma once
/// The points of a fault-free trace where a fault can act: before and after each step a consumer or the relay
/// made, in request order (a relay's points name it: rN:VERB#k, its own occurrence of the verb). One enumeration, with its skip rule written once here, used by sweep (every point),
/// compare (points classed by the gap they fall in) and check (how far each verb's k reaches).
///
/// Skipped, because a fault there provably cannot differ from one at a point that is kept:
///  - a read that delivered nothing: the servers' state is the same before and after it, and the same as
///    after the process's previous step;
///  - a step that did not complete (in flight at the end, cut): it has no "after";
///  - a relay's (rN's) SELECT that returned no row: a poll of the outbox that found nothing;
///  - connection set-up (setUpCommand): what a client library sends as it connects, before any work of the
///    target's own (Valkey AUTH, SELECT, HELLO, CLIENT SETNAME, ioredis's INFO ready check; PostgreSQL SET),
///    no step of the target's logic; check's kill model and hold release points skip them too.
#include "history/history.h"

#include <string>
#include <vector>

namespace idem {

struct TracePoint {
  Fault fault;          ///< a kill at the point (sweep and compare run kills; other kinds reuse the point)
  std::string process;  ///< whose step
  std::string server;   ///< "pg" | "valkey"
  std::string detail;
  std::string prevVerb; ///< the verb of the process's previous kept step ("" at its start)
  std::string nextVerb; ///< the verb of its next kept step ("" at its end)
  int64_t opIndex = -1; ///< Op::index of the step in the history it was traced from
  /// No error fault there: a PostgreSQL group ended by Flush (ops::Step::flushed), a step of a Valkey
  /// transaction but its EXEC (ops::Step::inMulti): the proxy can't stand in for its reply.
  bool noError = false;
};

struct SkippedStep {
  std::string step;   ///< "XREADGROUP#4"
  std::string reason; ///< why it has no point
};

struct Trace {
  std::vector<TracePoint> points; ///< two per kept step (before, after), in request order
  std::vector<SkippedStep> skipped;
};

Trace traceOf(const std::vector<Op>& history);

/// The faults of `kinds` at one trace point, in the order of `kinds` (sweep --faults, docs/faults.md):
/// kill, drop: the point itself; delay: the point, `delayMs` long; error: before points only, the server's
/// transient error (40001, LOADING); forget: after points of Valkey steps only (where the broker's state
/// moves); restart: the step's own server. A kind unknown here gives nothing, and so does an error at a
/// PostgreSQL group ended by Flush (it would never fire).
std::vector<Fault> faultsAt(const TracePoint& p, const std::vector<std::string>& kinds, int delayMs);

/// The delay of a sweep's or check's delay faults: past CLAIM_IDLE_MS, so that the entries in hand become
/// claimable meanwhile, and at least 100 ms.
int sweepDelayMs(int claimIdleMs);

/// One step of one process, with its number among that process's steps of its verb (the k of a fault
/// cN:before|after:VERB#k), as the proxies count it: in request order.
struct ProcessStep {
  const Op* op = nullptr;
  const ops::Step* step = nullptr;
  int k = 0;
  /// `kind`:[process:]when:VERB#k, e.g. hold:c1:before:COMMIT#1
  Fault fault(const std::string& kind, When when) const;
};

/// Every step `process` made, in request order, numbered per verb.
std::vector<ProcessStep> processSteps(const std::vector<Op>& history, const std::string& process);

/// The work of one entry by one process: its kept steps (traceOf's rule: no set-up step, no read that
/// delivered nothing, no step in flight at the end) after the previous entry's acknowledgement (from the
/// read that delivered it, for the first) up to and including the step that acknowledged `entry` (an XACK,
/// an offset commit: a step with `acked`).
struct EntryWork {
  std::string entry;
  int event = 0;
  bool retry = false; ///< the producer's retry of an event sent before (ops::Send::retry)
  std::vector<ProcessStep> steps;
};
/// Whether a step counts as a process's work in entryWork: not set-up, answered, not a read that delivered
/// nothing.
bool workStep(const ops::Step& s);
/// The entries `process` acknowledged, in order, with the work of each.
std::vector<EntryWork> entryWork(const std::vector<Op>& history, const std::string& process);

/// Whether a command is connection set-up: what a client library sends on a connection as it connects, not
/// the target's work. It is numbered apart from the target's own steps (a SQL SELECT#1 is the first SQL
/// SELECT, whatever Valkey database a worker uses) and is never a fault point nor a hold's release point: it
/// happens whenever a process connects, so a point on it orders nothing (docs/steps.md, "Set-up steps").
///  - Valkey, at any time: AUTH and SELECT (the secret and the database of the URL idemproof gives), HELLO
///    (the protocol), CLIENT SETNAME and CLIENT SETINFO (the connection's name and library);
///  - Valkey, before the connection's first command that is not set-up: INFO (ioredis's ready check) and
///    PING (a handshake). Later, they are the target's own (a health check) and stay steps;
///  - PostgreSQL, before the connection's first statement that is not set-up: SET, RESET and SHOW (session
///    parameters a driver sets or reads as it connects; the startup packet itself is no step).
/// `connectionWorked`: the connection already carried a command that is not set-up. `detail` is the
/// command line (the CLIENT subcommand is in it).
bool setUpCommand(const std::string& server, const std::string& verb, const std::string& detail, bool connectionWorked);

/// A step the controller found to be connection set-up (ops::Step::setUp, by setUpCommand); in histories
/// recorded before that flag, Valkey SELECT and AUTH.
bool setUpStep(const ops::Step& step);

/// The counter a step's k is taken from: set-up steps are counted apart from the target's own.
std::string stepCounter(const std::string& verb, bool setUp);

} // namespace idem
