// A paused consumer wakes as a zombie: a process was stopped (the pause fault: a GC pause, a stopped VM)
// while it held an event; its heartbeats stopped with it, so the broker handed the event to another
// process, which applied it; the paused one woke and applied it too, as if the event were still its own.
// What keeps it right is a fence the database keeps: the mark in the effect's transaction on a unique key,
// so that the second transaction waits for the first and then applies nothing.
#include "checkers/diagnosis.h"
#include "checkers/patterns/patterns.h"

#include <fmt/format.h>

namespace idem::detail::patterns {

namespace {

/// The first write of `process` after op `after` whose transaction committed after op `since`, and its
/// COMMIT: a batch's writes are not one per entry (a mark and a credit), so the write is found by when it
/// took effect, not by its rank.
std::optional<std::pair<StepAt, StepAt>> committedAfter(const HistoryView& h, const std::string& process, int64_t after,
                                                        int64_t since) {
  for (const auto& st : stepsOf(h, process, after)) {
    if (!isWrite(*st.step)) continue;
    if (auto c = commitOf(h, process, st.op); c && c->op > since) return std::make_pair(st, *c);
  }
  return std::nullopt;
}

} // namespace

Found pausedMemberWorks(const HistoryView& h, const Violation& v) {
  if (v.kind != "duplicate") return std::nullopt;
  for (const auto& f : h.otherFaults) {
    if (f.fault.kind != "pause") continue;
    for (int n : v.events) {
      // The paused process held the event when it was stopped, and a write of its took effect after that;
      const DeliveryRec* held = nullptr;
      for (const DeliveryRec* d : h.deliveriesOf(n))
        if (d->process == f.process && d->op < f.op) held = d;
      if (!held) continue;
      auto old = committedAfter(h, f.process, held->op, f.op);
      if (!old) continue;
      // another process was handed the event while it slept, and applied it.
      for (const DeliveryRec* d : h.deliveriesOf(n)) {
        if (d->process == f.process || d->op < f.op) continue;
        auto next = committedAfter(h, d->process, d->op, d->op);
        if (!next) continue;
        return make("paused-member-works", "a paused consumer wakes as a zombie",
                    {f.op, held->op, d->op, old->first.op, old->second.op, next->first.op, next->second.op},
                    fmt::format("{} was paused at {} while it held event {} ({}); the broker handed the event to {} "
                                "({}), which applied it ({} {}); {} woke and applied it too ({} {}), without "
                                "checking that it still owned it",
                                f.process, f.fault.str(), n, held->label, d->process, d->label, d->process,
                                next->second.name(), f.process, f.process, old->second.name()),
                    "apply and mark in one transaction on a unique key (INSERT INTO processed_events(event_id) VALUES "
                    "($1) ON CONFLICT DO NOTHING, the effect only when it inserted a row): the second consumer's insert "
                    "waits for the first transaction and then inserts nothing, however long either slept");
      }
    }
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
