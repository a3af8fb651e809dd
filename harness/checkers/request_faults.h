#pragma once
/// Internal: the faults at an HTTP server's steps told by the client's request they hit — "r3 (a retry of
/// key 2) was in flight when s1's connection dropped at drop:after:COMMIT#2" — for the HTTP checkers'
/// messages and the HTTP anti-patterns. Pure functions of the history's records.
#include "history/history.h"

#include <cstdint>
#include <string>
#include <vector>

namespace idem::detail {

/// "r3 (a retry of key 2)": a request by its id and role (the first request of a key, a retry, the client's
/// retry at the end, a burst's copy, a mismatch, a request without a key or with a malformed one).
std::string requestName(const ops::Request& r);

/// A fault that fired at the server's step, told as it happened to `process`: "s1 was killed at
/// after:COMMIT#1", "s1's connection dropped at drop:after:COMMIT#1", "PostgreSQL restarted at …" (the
/// kind's phrase; a kill's "was killed at").
std::string faultEvent(const Fault& f, const std::string& process);

/// A fault that fired in an HTTP run, and the requests in flight then (written before it, not answered yet).
/// One request at a time is the rule of the client; a burst's copies, or a request sent while a timed-out one
/// is held, are in flight together, and the history does not say which one's step it was: each is named.
struct RequestFault {
  int64_t op = 0;               ///< the fault's history index
  std::string process;          ///< the server process it reached ("s1")
  Fault fault;
  const ops::Request* request = nullptr; ///< the last one written of `inFlight`, or none
  int64_t requestOp = -1;       ///< its history index
  std::vector<const ops::Request*> inFlight; ///< in the order written
};

/// Every fault that fired in `ops` (kills and the others), in history order, each with the request it hit.
std::vector<RequestFault> requestFaults(const std::vector<Op>& ops);

/// "r1 (the first request of key 1) was in flight when s1's connection dropped at drop:after:COMMIT#1; …"
/// ("r1 (…) and r2 (…) were in flight when …" for several): the faults of `faults` while a request with key
/// `key` was in flight, each once; "" when none.
std::string faultsOnKey(const std::vector<RequestFault>& faults, int key);

} // namespace idem::detail
