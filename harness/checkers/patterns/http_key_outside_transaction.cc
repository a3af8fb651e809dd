// HTTP: the key's state outside the effect's transaction. The server committed the key's row (or the
// effect) in a transaction of its own and was killed, or lost its transaction to a fault (a dropped
// connection, an error, a restart), before the transaction that completes the key: the key was left "in
// progress", or a retry executed the request again.
#include "checkers/patterns/patterns.h"
#include "checkers/request_faults.h"

#include <fmt/format.h>

#include <set>

namespace idem::detail::patterns {

namespace {

/// The commits of a step range: its COMMITs and its writes in autocommit (`autocommits` gets those).
std::vector<StepAt> commitsIn(const HistoryView& h, const std::string& process, int64_t from, int64_t until,
                              std::set<int64_t>* autocommits = nullptr) {
  std::vector<StepAt> out;
  for (const auto& st : stepsOf(h, process, from, until)) {
    if (!st.step->reachedServer() || st.step->error) continue;
    if (isCommit(*st.step)) {
      if (committed(*st.step)) out.push_back(st);
    } else if (auto c = isWrite(*st.step) ? commitOf(h, process, st.op) : std::nullopt; c && c->op == st.op) {
      out.push_back(st);
      if (autocommits) autocommits->insert(st.op);
    }
  }
  return out;
}

/// A request a server process completed alone (answered 2xx, no other request and no fault in between) with
/// two commits or more, before or after the fault: the server's way to serve a request spans transactions.
/// nullptr when none.
const ops::Request* completedInSeveralCommits(const HistoryView& h) {
  for (size_t i = 0; i < h.ops.size(); ++i) {
    const auto* req = h.ops[i].as<ops::Request>();
    if (!req || req->burst != 0) continue;
    for (size_t j = i + 1; j < h.ops.size(); ++j) {
      const Op& op = h.ops[j];
      if (op.as<ops::Request>() || op.as<ops::FaultOp>()) break;
      const auto* res = op.as<ops::Response>();
      if (!res || res->id != req->id) continue;
      if (res->outcome == "answered" && res->status >= 200 && res->status < 300 &&
          commitsIn(h, req->server, static_cast<int64_t>(i), static_cast<int64_t>(j)).size() >= 2)
        return req;
      break;
    }
  }
  return nullptr;
}

} // namespace

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
    std::set<int64_t> autocommits;
    // The steps of the request up to the fault, and its own step for an `after` point when the step's
    // record came after the fault's (a restart answers the step once the server is back).
    int64_t until = fault.op;
    if (fault.fault.when == When::After)
      for (const auto& st : stepsOf(h, fault.process, fault.op)) {
        if (st.step->verb == fault.fault.verb && st.step->k == fault.fault.k) until = st.op + 1;
        break;
      }
    const std::vector<StepAt> commits = commitsIn(h, fault.process, fault.requestOp, until, &autocommits);
    // A server that keeps the key, the effect and the answer in one transaction commits once per request:
    // a kill after that COMMIT leaves the stored answer for the retry. Two commits, or a key stuck after
    // one, show the key's state committed apart from the effect; so does one commit before a double effect
    // when a request the server completed took two (the effect committed, the key's row not yet).
    const ops::Request* twice = nullptr;
    if (commits.size() == 1 && v.kind == "double-effect") twice = completedInSeveralCommits(h);
    if (commits.empty() || (commits.size() < 2 && v.kind != "stuck-key" && !twice)) continue;
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
                            outcome) +
                    (twice ? fmt::format(" ({} was served in two transactions or more)", requestName(*twice)) : ""),
                "one transaction per request: BEGIN; INSERT INTO idempotency_keys(key, request_hash) VALUES ($key, "
                "$hash) ON CONFLICT DO NOTHING (none inserted: read the stored answer, or answer 409 while it is in "
                "flight); apply the effect; UPDATE idempotency_keys SET status, body = the answer; COMMIT; then "
                "answer");
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
