// A revoked member keeps working: the group dropped a process in the middle of its batch (the rebalance
// fault: its session or poll interval ran out) and gave its partitions to another, which read the event
// again from the last committed offset and applied it; the dropped process, which still held the event,
// went on and applied it too. Kafka's form of two owners for one record: what keeps it right is dedup in
// the effect's transaction, and a member that stops working on what it no longer owns.
#include "checkers/diagnosis.h"
#include "checkers/patterns/patterns.h"

#include <fmt/format.h>

namespace idem::detail::patterns {

namespace {

/// The first write of `process` in (after, before) that took effect, and where it did (its COMMIT).
std::optional<std::pair<StepAt, StepAt>> appliedBetween(const HistoryView& h, const std::string& process, int64_t after,
                                                        int64_t before = kNoOp) {
  for (const auto& st : stepsOf(h, process, after, before)) {
    if (!isWrite(*st.step)) continue;
    if (auto c = commitOf(h, process, st.op)) return std::make_pair(st, *c);
  }
  return std::nullopt;
}

} // namespace

Found revokedMemberWorks(const HistoryView& h, const Violation& v) {
  if (v.kind != "duplicate") return std::nullopt;
  for (const auto& f : h.otherFaults) {
    if (f.fault.kind != "rebalance") continue;
    for (int n : v.events) {
      // The dropped process held the event when the group dropped it ...
      const DeliveryRec* held = nullptr;
      for (const DeliveryRec* d : h.deliveriesOf(n))
        if (d->process == f.process && d->op < f.op) held = d;
      if (!held) continue;
      // ... and applied something after its step went on;
      auto old = appliedBetween(h, f.process, f.op);
      if (!old) continue;
      // another process was handed the event after the fault and applied it.
      for (const DeliveryRec* d : h.deliveriesOf(n)) {
        if (d->process == f.process || d->op < f.op) continue;
        auto next = appliedBetween(h, d->process, d->op);
        if (!next) continue;
        return make("revoked-member-works", "a revoked member keeps working",
                    {f.op, held->op, d->op, old->second.op, next->second.op},
                    fmt::format("the group dropped {} at {} while it held event {} ({}) and gave its partition to {}, "
                                "which read it again from the last committed offset ({}) and applied it ({} {}); {} "
                                "went on with its batch and applied it too ({} {})",
                                f.process, f.fault.str(), n, held->label, d->process, d->label, d->process,
                                next->second.name(), f.process, f.process, old->second.name()),
                    "apply and mark in one transaction (INSERT INTO processed_events(event_id) VALUES ($1) ON CONFLICT "
                    "DO NOTHING, the effect only when it inserted a row), so that two members holding one record "
                    "apply it once; and stop working on partitions the group took away: commit in the revocation "
                    "callback, and take a refused offset commit (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION) as lost "
                    "ownership of the batch");
      }
    }
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
