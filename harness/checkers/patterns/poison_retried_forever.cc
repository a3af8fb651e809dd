// Poison event retried forever. A poison event's entry handed over more than max_deliveries times and never
// acknowledged: the consumer leaves every failure pending for a retry, and a poison event fails the same way
// on every delivery, so nothing ever ends its redeliveries.
#include "checkers/patterns/patterns.h"

#include <fmt/format.h>

namespace idem::detail::patterns {

Found poisonRetriedForever(const HistoryView& h, const Violation& v) {
  if (v.invariant != "poison:bounded" || v.kind != "unbounded" || v.events.size() != 1 || v.entries.size() != 1)
    return std::nullopt;
  const int n = v.events.front();
  if (h.acked(n)) return std::nullopt; // acknowledged in the end: redelivered for another reason
  std::vector<std::string> reads;
  for (const DeliveryRec* d : h.deliveriesOf(n))
    if (d->entry == v.entries.front()) reads.push_back(d->process + " " + d->label);
  if (reads.size() < 2) return std::nullopt;
  return make("poison-retried-forever", "poison event retried forever", v.ops,
              fmt::format("poison event {} (entry {}) was handed over {} times ({}, …, {}) and never acknowledged "
                          "nor dead-lettered: every failure is left pending for a retry that fails alike",
                          n, v.entries.front(), reads.size(), reads.front(), reads.back()),
              "tell a failure that can never pass (validation, an unknown key) from a transient one; dead-letter "
              "it at once, or once its delivery count (XPENDING's, or a counter row) reaches MAX_DELIVERIES: write "
              "it to the dead letter idempotently (INSERT … ON CONFLICT (event_id) DO NOTHING), then acknowledge it");
}

} // namespace idem::detail::patterns
