#pragma once
/// Where a client's timeout keeps an HTTP request in flight (docs/http-contract.md, "The in-flight hold"):
/// at the server's last step before its answer, whatever that step is — a PostgreSQL COMMIT, a statement in
/// autocommit, a Valkey command. Which step that is, is learned from the request's fault-free rehearsal: the
/// schedule's requests up to its last timed-out one, played once with every request answered and no fault,
/// against the same initial state; the steps the server made between writing a request and answering it are
/// that request's steps, and the last of them (by the time its request left the server) is its hold point.
/// In the run itself the gate holds that step (its verb's n-th occurrence from the request's write) before
/// the server sees it. Pure: a schedule in, a schedule out; a history in, the hold points out.
#include "history/history.h"
#include "plan/schedule.h"

#include <map>
#include <string>
#include <vector>

namespace idem {

/// A request's last step before its answer: the `nth` step of `verb` the server sent after the request was
/// written (1: the first), on `server` ("pg", "valkey").
struct HoldPoint {
  std::string verb;
  int nth = 1;
  std::string server;

  bool operator==(const HoldPoint& o) const { return verb == o.verb && nth == o.nth && server == o.server; }
};

/// Whether the schedule has a request whose client times out (and so needs a hold point).
bool hasTimeout(const Schedule& s);

/// The rehearsal of `s`: its client requests up to and including its last timed-out one, each answered
/// (a timeout waits for its answer), no fault. Events and scenario are kept.
Schedule rehearsalOf(const Schedule& s);

/// The hold point of each request of a rehearsal's history, by its client op (Request::op, 1-based): the
/// last step (set-up excluded) whose request the server sent between the request's record and its answer's
/// record. A request with no step before its answer has none. Requests are taken one at a time, as the
/// rehearsal writes them (a burst's copies are not, and get none).
std::map<int, HoldPoint> learnHoldPoints(const std::vector<Op>& history);

/// "COMMIT (pg), the 1st COMMIT after the request".
std::string describe(const HoldPoint& p);

} // namespace idem
