// Poison event dropped. A poison event's entry acknowledged with no dead letter written for it: the
// consumer took "can't apply it" as "done with it", and the event is gone without a trace.
#include "checkers/patterns/patterns.h"

#include <fmt/format.h>

namespace idem::detail::patterns {

Found poisonDropped(const HistoryView& h, const Violation& v) {
  if (v.invariant != "poison:dead-lettered" || v.kind != "not-dead-lettered" || v.events.size() != 1)
    return std::nullopt;
  const int n = v.events.front();
  for (const AckRec* acked : h.acksOf(n)) {
    const AckRec& a = *acked;
    std::vector<int64_t> cited = v.ops;
    for (const DeliveryRec* d : h.deliveriesOf(n))
      if (d->entry == a.entry && d->op < a.op) cited.push_back(d->op);
    cited.push_back(a.op);
    const auto* step = stepAt(h, a.op);
    return make("poison-dropped", "poison event dropped", cited,
                fmt::format("{} acknowledged entry {} of poison event {} ({}) and wrote no dead letter for it: the "
                            "event is gone without a trace",
                            a.process, a.entry, n, step ? step->name() : "its acknowledgement"),
                "write the event to the dead letter with its id first (idempotently: INSERT … ON CONFLICT "
                "(event_id) DO NOTHING, COMMIT), then acknowledge it");
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
