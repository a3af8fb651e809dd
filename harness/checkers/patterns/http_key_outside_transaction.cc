// HTTP: the key's state outside the effect's transaction. The server committed the key's row (or the
// effect) in a transaction of its own and was killed before the transaction that completes the key: the
// key was left "in progress", or a retry executed the request again.
#include "checkers/patterns/patterns.h"

#include <fmt/format.h>

namespace idem::detail::patterns {

Found httpKeyOutsideTransaction(const HistoryView& h, const Violation& v) {
  if (v.invariant.rfind("http:", 0) != 0) return std::nullopt;
  if (v.kind != "stuck-key" && v.kind != "double-effect" && v.kind != "lost-effect" && v.kind != "no-answer")
    return std::nullopt;
  for (const KillRec& kill : h.kills) {
    // The request in flight at the kill: the last one written before it.
    int64_t written = -1;
    for (const Op& op : h.ops) {
      if (op.index >= kill.op) break;
      if (op.as<ops::Request>()) written = op.index;
    }
    if (written < 0) continue;
    std::vector<StepAt> commits;
    for (const auto& st : stepsOf(h, kill.process, written, kill.op)) {
      if (st.step->reachedServer() && !st.step->error && isCommit(*st.step)) commits.push_back(st);
    }
    // A server that keeps the key, the effect and the answer in one transaction commits once per request:
    // a kill after that COMMIT leaves the stored answer for the retry. Two commits, or a key stuck after
    // one, show the key's state committed apart from the effect.
    if (commits.empty() || (commits.size() < 2 && v.kind != "stuck-key")) continue;
    std::vector<int64_t> cited{kill.op};
    std::string names;
    for (size_t i = 0; i < commits.size(); ++i) {
      cited.push_back(commits[i].op);
      names += (i ? ", " : "") + commits[i].name();
    }
    const char* outcome = v.kind == "stuck-key"      ? "the key was left in progress"
                          : v.kind == "double-effect" ? "a retry executed the request again"
                                                      : "the request's effect and its answer came apart";
    return make("http-key-outside-transaction", "the key's state outside the effect's transaction", cited,
                fmt::format("{} committed {} ({}) and was killed at {} before the transaction that completes the "
                            "key; {}",
                            kill.process,
                            commits.size() == 1 ? "part of the request's work in a transaction of its own"
                                                : "the request's work in separate transactions",
                            names, kill.point, outcome),
                "one transaction per request: BEGIN; INSERT INTO idempotency_keys(key, request_hash) VALUES ($key, "
                "$hash) ON CONFLICT DO NOTHING (none inserted: read the stored answer, or answer 409 while it is in "
                "flight); apply the effect; UPDATE idempotency_keys SET status, body = the answer; COMMIT; then "
                "answer");
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
