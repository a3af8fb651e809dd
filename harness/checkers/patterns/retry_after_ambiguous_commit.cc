// Retry without dedup after an ambiguous commit: the connection dropped after COMMIT reached PostgreSQL
// (the reply was lost), the process ran the transaction again, and the event was applied twice.
#include "checkers/patterns/patterns.h"

#include <fmt/format.h>

namespace idem::detail::patterns {

namespace {

/// The event of the one entry that the next acknowledgement of `process` after op `after` acknowledged
/// first (before its next read); 0 when there is none, or it acknowledged several.
int ackedNext(const HistoryView& h, const std::string& process, int64_t after) {
  for (const auto& st : stepsOf(h, process, after)) {
    if (!st.step->delivered.empty()) return 0;
    if (!isAck(*st.step)) continue;
    const auto acked = newlyAcked(h, st);
    if (acked.size() != 1) return 0;
    auto ev = h.entryEvent.find(acked.front());
    return ev == h.entryEvent.end() ? 0 : ev->second;
  }
  return 0;
}

} // namespace

Found retryAfterAmbiguousCommit(const HistoryView& h, const Violation& v) {
  if (v.kind != "duplicate") return std::nullopt;
  for (int n : v.events) {
    for (const DeliveryRec* d : h.deliveriesOf(n)) {
      const KillRec* kill = killOf(h, d->process, d->op);
      const auto held = stepsOf(h, d->process, d->op, kill ? kill->op : kNoOp);
      for (size_t i = 0; i < held.size(); ++i) {
        const ops::Step& s = *held[i].step;
        if (s.outcome != ops::StepOutcome::DroppedAfter || !(isCommit(s) || isWrite(s))) continue;
        // The same work again: the next committed write after the drop, before a new delivery.
        for (size_t j = i + 1; j < held.size(); ++j) {
          if (!held[j].step->delivered.empty()) break;
          if (!isWrite(*held[j].step)) continue;
          auto c = commitOf(h, d->process, held[j].op);
          if (!c) continue;
          // Which event the transaction was for: the entry the process acknowledged next. A batch read hands
          // over several events at once, so the event held is not always the one whose delivery led here.
          if (ackedNext(h, d->process, c->op) != n) break;
          std::vector<int64_t> cited{held[i].op, held[j].op, c->op};
          for (const auto& f : h.otherFaults)
            if (f.process == d->process && f.fault.kind == "drop" && f.op >= held[i].op && f.op < held[j].op)
              cited.push_back(f.op);
          return make("retry-after-ambiguous-commit", "retry without dedup after an ambiguous commit", cited,
                      fmt::format("{}'s connection dropped after {} reached PostgreSQL, so the commit's outcome was "
                                  "unknown; {} ran the transaction again ({}, {}) and event {} was applied again",
                                  d->process, held[i].name(), d->process, held[j].name(), c->name(), n),
                      "make the retry harmless: INSERT INTO processed_events(event_id) VALUES ($1) ON CONFLICT DO "
                      "NOTHING in the same transaction as the effect, apply the effect only when it inserted a row, "
                      "and retry the whole transaction; or make the statement idempotent itself");
        }
      }
    }
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
