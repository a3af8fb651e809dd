// Dedup on the broker's id: one event came as two entries (the producer's retry) and both were applied,
// although the consumer marks what it processed: its mark is keyed by the entry, not by the event id.
#include "checkers/patterns/patterns.h"

#include <fmt/format.h>

#include <algorithm>

namespace idem::detail::patterns {

Found dedupOnBrokerId(const HistoryView& h, const Violation& v) {
  if (v.kind != "duplicate") return std::nullopt;
  for (int n : v.events) {
    const auto sends = h.sendsOf(n);
    if (sends.size() < 2) continue;
    const std::string id = eventIdOf(h, n);
    // Each entry's mark: a Valkey mark whose key names the entry and not the event id.
    std::vector<int64_t> cited;
    std::vector<std::string> told;
    for (const SendRec* s : sends) {
      for (const Op& op : h.ops) {
        const auto* st = op.as<ops::Step>();
        if (!st || !isMark(*st, {}) || st->server != "valkey") continue;
        if (st->detail.find(s->entry) == std::string::npos || (!id.empty() && st->detail.find(id) != std::string::npos))
          continue;
        cited.push_back(op.index);
        told.push_back(fmt::format("{} for {}", st->name(), s->entry));
        break;
      }
    }
    if (told.size() < 2) continue;
    return make("dedup-on-broker-id", "dedup on the broker's id", cited,
                fmt::format("event {} came as entries {} and {}; the dedup mark is keyed by the entry id ({} and "
                            "{}), so both were applied",
                            n, sends[0]->entry, sends[1]->entry, told[0], told[1]),
                "key the mark by the event's own id (the event_id field), not the broker's entry id: INSERT INTO "
                "processed_events(event_id) VALUES ($event_id) ON CONFLICT DO NOTHING in the effect's transaction");
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
