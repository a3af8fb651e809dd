// The provider's key as the only dedup (sink). A consumer (or an outbox relay) that sends every call of an
// event with the same Idempotency-Key and keeps no record of its own of what it already charged is right only
// while the provider honours keys. Against one that ignores them (`--sink-policy ignore`) a call made again
// executes again: for a copy of the event the producer sent again, after a redelivery, after its own retry, or
// after a kill that cut a call from the COMMIT that books it.
#include "checkers/detail.h"
#include "checkers/patterns/patterns.h"
#include "checkers/sink_view.h"

#include <fmt/format.h>

namespace idem::detail::patterns {

namespace {

const char* kKeyOnlyId = "sink-key-only";
const char* kKeyOnlyName = "the provider's key as the only dedup (sink)";
const char* kKeyOnlyFix =
    "a key protects only against a provider that honours it: keep your own record of what was charged (a "
    "processed mark or an outbox row committed with the booking) and look at it before calling, so that an event "
    "already booked is not called again; after a call whose outcome was lost (a kill, a timeout, a cut "
    "connection) ask the provider what became of the key (a lookup by the event's reference) before calling "
    "again";

/// Why the second call was made, as the steps between the two show it: a kill of the first caller before a
/// COMMIT reached PostgreSQL after its call, a copy the producer sent again, or nothing the steps tell.
std::string whyCalledAgain(const HistoryView& h, const SinkCall& first, const SinkCall& again, int n) {
  if (!first.process.empty() && first.stepOp >= 0) {
    if (const KillRec* kill = killOf(h, first.process, first.stepOp); kill && kill->op < again.op) {
      return fmt::format(", after the kill at {} {}", kill->point,
                         committedBetween(h, first.process, first.stepOp, kill->op) ? "(its COMMIT had reached PostgreSQL)"
                                                                                    : "cut the first call from its COMMIT");
    }
  }
  if (h.sendsOf(n).size() > 1) return ", for a copy of the event the producer sent again";
  return "";
}

} // namespace

Found sinkKeyOnly(const HistoryView& h, const Violation& v) {
  if (v.invariant != "sink:exactly-once" || v.kind != "charged-twice" || v.events.size() != 1) return std::nullopt;
  if (sinkPolicyOf(h.scenario, h.ops) != "ignore") return std::nullopt;
  const SinkView s(h);
  const int n = v.events.front();
  const auto ex = s.executions(s.idOf(n));
  // The first two executions that carried the same key.
  for (size_t i = 0; i < ex.size(); ++i) {
    const ops::Call& a = *ex[i]->call;
    if (!a.keyHeader) continue;
    for (size_t j = i + 1; j < ex.size(); ++j) {
      const ops::Call& b = *ex[j]->call;
      if (!b.keyHeader || b.key != a.key) continue;
      std::vector<int64_t> cited = SinkView::opsOf(*ex[i]);
      for (int64_t op : SinkView::opsOf(*ex[j])) cited.push_back(op);
      return make(kKeyOnlyId, kKeyOnlyName, cited,
                  fmt::format("{} called the sink for event {} with Idempotency-Key '{}' (execution {}, call {}), and "
                              "{} called again with the same key (execution {}, call {}){}; the provider ignores keys "
                              "(sink policy ignore), so the key stopped nothing",
                              s.caller(*ex[i]), n, a.key, a.execution, a.id, s.caller(*ex[j]), b.execution, b.id,
                              whyCalledAgain(h, *ex[i], *ex[j], n)),
                  kKeyOnlyFix);
    }
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
