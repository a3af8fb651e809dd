// A consumer deleted while it held pending entries: XGROUP DELCONSUMER drops the consumer's pending list
// from the group, and with it every entry delivered to it and not yet acknowledged. A consumer that
// deletes its own name on the way out (a `finally`, an exit hook) after a failure, or one that reaps idle
// consumers without claiming what they held, loses those events: no consumer is handed them again.
#include "checkers/patterns/patterns.h"

#include <fmt/format.h>

namespace idem::detail::patterns {

Found consumerDeletedWithPending(const HistoryView& h, const Violation& v) {
  if (v.kind != "lost") return std::nullopt;
  for (int n : v.events)
    for (const auto& del : h.deletedConsumers)
      for (const auto& entry : del.entries) {
        auto it = h.entryEvent.find(entry);
        if (it == h.entryEvent.end() || it->second != n) continue;
        std::vector<int64_t> cited;
        for (const DeliveryRec* d : h.deliveriesOf(n))
          if (d->entry == entry && d->op < del.op) cited.push_back(d->op);
        cited.push_back(del.op);
        const auto* step = stepAt(h, del.op);
        return make("consumer-deleted-with-pending", "a consumer deleted with its pending entries", cited,
                    fmt::format("{} deleted consumer {}{} ({}) while it held {} pending entr{}, entry {} (event {}) "
                                "among them, unapplied: the group dropped them, and no consumer is handed them "
                                "again: event {} lost",
                                del.process, del.consumer, del.own ? " (its own name)" : "",
                                step ? step->name() : "XGROUP DELCONSUMER", del.pending, del.pending == 1 ? "y" : "ies",
                                entry, n, n),
                    "delete a consumer only once its pending count (XINFO CONSUMERS, or XPENDING for its name) is "
                    "0: claim what it holds first (XAUTOCLAIM, or XCLAIM to a live consumer), and never delete a "
                    "consumer's own name on the way out while it holds entries (a finally or an exit hook after "
                    "a failure)");
      }
  return std::nullopt;
}

} // namespace idem::detail::patterns
