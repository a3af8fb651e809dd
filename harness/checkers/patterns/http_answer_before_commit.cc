// HTTP: the answer before the COMMIT. A request answered success whose effect does not exist, while the
// COMMIT its server process sent during the request never reached PostgreSQL (the process killed, or its
// connection dropped, before it): the server wrote its answer before its transaction had committed, and
// the client was told of an order that never was (lost-effect), or a retry of the key executed it anew and
// got another answer (replay-mismatch). Named only when such a COMMIT lies between the request and its
// answer; a server that awaits its COMMIT would have died with the request unanswered.
#include "checkers/patterns/patterns.h"
#include "checkers/tx_statement.h"

#include <fmt/format.h>

namespace idem::detail::patterns {

namespace {

/// The COMMIT of `req`'s server process, between the request (op `written`) and its 2xx answer, that never
/// reached PostgreSQL, with the answer's index; nullopt when there is none.
std::optional<std::pair<StepAt, int64_t>> unsentCommit(const HistoryView& h, const ops::Request& req, int64_t written) {
  int64_t answered = -1;
  for (size_t i = static_cast<size_t>(written) + 1; i < h.ops.size() && answered < 0; ++i)
    if (const auto* a = h.ops[i].as<ops::Response>(); a && a->id == req.id && a->final() && a->status >= 200 &&
                                                      a->status < 300)
      answered = static_cast<int64_t>(i);
  if (answered < 0) return std::nullopt;
  for (const StepAt& s : stepsOf(h, req.server, written, answered)) {
    using O = ops::StepOutcome;
    if (txStatement(*s.step).kind == TxStatement::Kind::Commit &&
        (s.step->outcome == O::KilledBefore || s.step->outcome == O::DroppedBefore))
      return std::make_pair(s, answered);
  }
  return std::nullopt;
}

} // namespace

Found httpAnswerBeforeCommit(const HistoryView& h, const Violation& v) {
  // The answer of a request told of an effect that is not there (lost-effect), or a later request of the key
  // executed it anew and got another answer (replay-mismatch).
  if (v.kind != "lost-effect" && v.kind != "replay-mismatch") return std::nullopt;
  for (int64_t i : v.ops) {
    if (i < 0 || static_cast<size_t>(i) >= h.ops.size()) continue;
    const auto* req = h.ops[static_cast<size_t>(i)].as<ops::Request>();
    if (!req) continue;
    const auto found = unsentCommit(h, *req, i);
    if (!found) continue;
    const auto& [commit, answered] = *found;
    using O = ops::StepOutcome;
    return make("http-answer-before-commit", "the answer before the COMMIT", {i, commit.op, answered},
                fmt::format("r{} was answered success, but {}'s {} that was to commit its work never reached "
                            "PostgreSQL ({}): the server wrote its answer before its transaction committed",
                            req->id, req->server, commit.name(),
                            commit.step->outcome == O::KilledBefore ? "the process was killed before it"
                                                                    : "its connection was dropped before it"),
                "write the answer only once COMMIT has returned: await the transaction's commit before sending "
                "the reply (and store the answer in that transaction)");
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
