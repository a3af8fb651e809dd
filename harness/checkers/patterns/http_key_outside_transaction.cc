// HTTP: the key's state outside the effect's transaction. The server committed the key's row (or the
// effect) in a transaction of its own and was killed, or lost its transaction to a fault (a dropped
// connection, an error, a restart), before the transaction that completes the key: the key was left "in
// progress", or a retry executed the request again.
#include "checkers/patterns/patterns.h"
#include "checkers/request_faults.h"

#include <fmt/format.h>

#include <set>

namespace idem::detail::patterns {

Found httpKeyOutsideTransaction(const HistoryView& h, const Violation& v) {
  if (v.invariant.rfind("http:", 0) != 0) return std::nullopt;
  if (v.kind != "stuck-key" && v.kind != "double-effect" && v.kind != "lost-effect" && v.kind != "no-answer")
    return std::nullopt;
  // A kill, or a fault that ends the server's transaction under it: a dropped connection, an error answered
  // instead of a step (the transaction aborts), a server restart (every connection drops).
  for (const RequestFault& fault : requestFaults(h.ops)) {
    if (!fault.fault.isKill() && !failsTransaction(fault.fault)) continue;
    // The request in flight at the fault: the last one written before it.
    if (!fault.request) continue;
    // What the request committed: its COMMITs, and its writes outside a transaction block, which PostgreSQL
    // commits on their own (node-postgres's `pool.query(INSERT …)` with no BEGIN).
    std::vector<StepAt> commits;
    std::set<int64_t> autocommits;
    // The steps of the request up to the fault, and its own step for an `after` point when the step's
    // record came after the fault's (a restart answers the step once the server is back).
    int64_t until = fault.op;
    if (fault.fault.when == When::After)
      for (const auto& st : stepsOf(h, fault.process, fault.op)) {
        if (st.step->verb == fault.fault.verb && st.step->k == fault.fault.k) until = st.op + 1;
        break;
      }
    for (const auto& st : stepsOf(h, fault.process, fault.requestOp, until)) {
      if (!st.step->reachedServer() || st.step->error) continue;
      if (isCommit(*st.step)) {
        commits.push_back(st);
      } else if (auto c = isWrite(*st.step) ? commitOf(h, fault.process, st.op) : std::nullopt; c && c->op == st.op) {
        commits.push_back(st);
        autocommits.insert(st.op);
      }
    }
    // A server that keeps the key, the effect and the answer in one transaction commits once per request:
    // a kill after that COMMIT leaves the stored answer for the retry. Two commits, or a key stuck after
    // one, show the key's state committed apart from the effect.
    if (commits.empty() || (commits.size() < 2 && v.kind != "stuck-key")) continue;
    std::vector<int64_t> cited{fault.op};
    std::string names;
    for (size_t i = 0; i < commits.size(); ++i) {
      cited.push_back(commits[i].op);
      names += (i ? ", " : "") + commits[i].name() + (autocommits.count(commits[i].op) ? " in autocommit" : "");
    }
    const char* outcome = v.kind == "stuck-key"      ? "the key was left in progress"
                          : v.kind == "double-effect" ? "a retry executed the request again"
                                                      : "the request's effect and its answer came apart";
    const std::string work = "the work of " + requestName(*fault.request);
    return make("http-key-outside-transaction", "the key's state outside the effect's transaction", cited,
                fmt::format("{} committed {} ({}) and {} before the transaction that completes the key; {}",
                            fault.process,
                            commits.size() == 1 ? "part of " + work + " in a transaction of its own"
                                                : work + " in separate transactions",
                            names,
                            fault.fault.isKill() ? "was killed at " + fault.fault.str()
                                                 : "then " + faultEvent(fault.fault, fault.process),
                            outcome),
                "one transaction per request: BEGIN; INSERT INTO idempotency_keys(key, request_hash) VALUES ($key, "
                "$hash) ON CONFLICT DO NOTHING (none inserted: read the stored answer, or answer 409 while it is in "
                "flight); apply the effect; UPDATE idempotency_keys SET status, body = the answer; COMMIT; then "
                "answer");
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
