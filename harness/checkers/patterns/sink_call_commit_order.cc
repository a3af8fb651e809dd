// Call before commit / commit before call (sink). A consumer that makes an external call (a payment
// provider's charge) and commits its effect in PostgreSQL without a key derived from the event has a gap
// between the two that a kill lands in:
//   call, then commit: killed after the call and before its COMMIT, the event is redelivered and called again,
//     and the provider executes it a second time (charged twice), or nothing books it (charged, not booked);
//   commit, then call: killed after the COMMIT and before the call, the redelivery finds the event done and
//     never calls (booked, never charged).
#include "checkers/patterns/patterns.h"
#include "checkers/sink_view.h"

#include <fmt/format.h>

namespace idem::detail::patterns {

namespace {

const char* kId = "sink-call-commit-order";
const char* kName = "call before commit / commit before call (sink)";
const char* kFix =
    "derive an idempotency key from the event (Idempotency-Key: the event's id, the same on every call of it) "
    "so that a call made again after a redelivery is replayed by the provider, not executed; or write an "
    "outbox row (the call and its id) in the effect's transaction and let a relay make the call with the "
    "outbox id as its key and mark the row sent";

/// Call, then commit: an execution whose process was killed before any COMMIT reached the server after it.
Found callThenCommit(const HistoryView& h, const SinkView& s, const Violation& v, int n) {
  const std::string ref = s.idOf(n);
  const auto ex = s.executions(ref);
  for (size_t i = 0; i < ex.size(); ++i) {
    if (ex[i]->stepOp < 0) continue;
    const KillRec* kill = killOf(h, ex[i]->process, ex[i]->stepOp);
    if (!kill) continue;
    if (committedBetween(h, ex[i]->process, ex[i]->stepOp, kill->op)) continue;
    const ops::Call& first = *ex[i]->call;
    const CallStep* step = s.stepAt(ex[i]->stepOp);
    std::vector<int64_t> cited{ex[i]->stepOp, ex[i]->op, kill->op};
    std::string then;
    if (v.kind == "charged-twice") {
      const SinkCall* again = nullptr;
      for (size_t j = i + 1; j < ex.size() && !again; ++j)
        if (ex[j]->op > kill->op) again = ex[j];
      if (!again) continue;
      // The same key on both: the provider ignored a key the consumer did derive; not this mistake.
      if (first.keyHeader && again->call->keyHeader && first.key == again->call->key) continue;
      const CallStep* againStep = again->stepOp >= 0 ? s.stepAt(again->stepOp) : nullptr;
      cited.push_back(again->op);
      if (againStep) cited.push_back(againStep->op);
      then = fmt::format("; after the redelivery {} called again{} and the provider executed it again (execution {}, "
                         "call {}){}",
                         againStep ? againStep->process : std::string("a consumer"),
                         againStep ? " at " + againStep->step->name() : std::string(), again->call->execution,
                         again->call->id, first.keyHeader ? " under another key" : ", no key telling it a repeat");
    } else if (v.kind == "charged-not-booked") {
      then = "; nothing booked it afterwards";
    } else {
      continue;
    }
    return make(kId, kName, cited,
                fmt::format("{} called the sink for event {} at {} (execution {}, call {}) before committing its "
                            "effect; the kill at {} came before the COMMIT{}",
                            ex[i]->process, n, step ? step->step->name() : "its CALL", first.execution, first.id,
                            kill->point, then),
                kFix);
  }
  return std::nullopt;
}

/// Commit, then call: a process that held the event committed, then was killed before it called for it, and
/// nothing executed it afterwards.
Found commitThenCall(const HistoryView& h, const SinkView& s, int n) {
  const std::string ref = s.idOf(n);
  if (!s.executions(ref).empty()) return std::nullopt;
  for (const DeliveryRec* d : h.deliveriesOf(n)) {
    const KillRec* kill = killOf(h, d->process, d->op);
    if (!kill) continue;
    // The last COMMIT before the kill, and no call the sink received after it, nor any for this event.
    std::optional<StepAt> commit;
    bool calledAfter = false;
    for (const auto& st : stepsOf(h, d->process, d->op, kill->op)) {
      const CallStep* c = s.stepAt(st.op);
      if (committed(*st.step)) commit = st, calledAfter = false;
      else if (c && (c->callOp >= 0 || c->step->reachedServer())) calledAfter = true;
      if (c && c->ref == ref && c->callOp >= 0) return std::nullopt;
    }
    if (!commit || calledAfter) continue;
    std::vector<int64_t> cited{d->op, commit->op, kill->op};
    return make(kId, kName, cited,
                fmt::format("{} committed at {} before calling the sink for event {}; the kill at {} came before the "
                            "call, and no later delivery called it: booked, never charged",
                            d->process, commit->name(), n, kill->point),
                kFix);
  }
  return std::nullopt;
}

} // namespace

Found sinkCallCommitOrder(const HistoryView& h, const Violation& v) {
  if (v.invariant != "sink:exactly-once" && v.invariant != "sink:agreement") return std::nullopt;
  if (v.events.size() != 1) return std::nullopt;
  const SinkView s(h);
  const int n = v.events.front();
  if (v.kind == "charged-twice" || v.kind == "charged-not-booked") return callThenCommit(h, s, v, n);
  if (v.kind == "never-charged" || v.kind == "booked-not-charged") return commitThenCall(h, s, n);
  return std::nullopt;
}

} // namespace idem::detail::patterns
