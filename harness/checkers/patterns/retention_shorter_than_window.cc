// Retention shorter than the retry window: an `age` fault removed the consumer's dedup state (a mark's TTL
// ran out, a retention job pruned the row) while the producer could still retry, and a retry within the
// window was applied again. The checker names the violation `dedup-window` only then (invariant_sums.cc).
#include "checkers/diagnosis.h"
#include "checkers/patterns/patterns.h"

#include <fmt/format.h>

#include <algorithm>

namespace idem::detail::patterns {

Found retentionShorterThanWindow(const HistoryView& h, const Violation& v) {
  if (v.kind != "dedup-window" || v.events.empty()) return std::nullopt;
  const int n = v.events.front();
  const auto late = h.lateRetries(n);
  if (!late.removed || late.within == 0) return std::nullopt;
  std::vector<std::string> what;
  for (const auto& a : h.ages)
    if (std::find(late.ops.begin(), late.ops.end(), a.op) != late.ops.end())
      what.push_back(fmt::format("{} ({} key{} expired, {} row{} pruned)", a.fault, a.aged.expired,
                                 a.aged.expired == 1 ? "" : "s", a.aged.pruned, a.aged.pruned == 1 ? "" : "s"));
  const auto& window = h.scenario.retryWindowMs;
  return make("retention-shorter-than-window", "dedup retention shorter than the retry window", late.ops,
              fmt::format("{} removed the dedup state of event {} after {} ms of simulated time, while the producer "
                          "{}; its retry then took effect again",
                          listAnd(what), n, late.ageMs,
                          window ? fmt::format("may retry for {} ms", *window) : std::string("may retry at any time")),
              "keep what you deduplicate by for at least the producer's retry window and the time an entry may wait "
              "before it is handled: a mark's TTL (SET seen:<id> 1 NX PX …) and a retention job's age above "
              "retry_window_ms, or no expiry; or make the producer stop retrying sooner");
}

} // namespace idem::detail::patterns
