// A call made again without a key (sink). A consumer that sends its calls with no Idempotency-Key and calls
// an event's charge more than once (its own retry after a dropped answer, an error or a timeout; the
// producer's copy of the event; a redelivery) leaves the provider no way to tell a repeat: each call is a new
// charge. A kill between the call and its COMMIT is sink-call-commit-order, which comes first.
#include "checkers/detail.h"
#include "checkers/patterns/patterns.h"
#include "checkers/sink_view.h"

#include <fmt/format.h>

namespace idem::detail::patterns {

namespace {

const char* kWithoutKeyId = "sink-call-without-key";
const char* kWithoutKeyName = "a charge called again without a key (sink)";
const char* kWithoutKeyFix =
    "send an Idempotency-Key derived from the event (its id) on every call of it, retries included, so that "
    "the provider replays the first answer; and look at your own record of what was charged before calling for "
    "an event again";

} // namespace

Found sinkCallWithoutKey(const HistoryView& h, const Violation& v) {
  if (v.invariant != "sink:exactly-once" || v.kind != "charged-twice" || v.events.size() != 1) return std::nullopt;
  if (sinkPolicyOf(h.scenario, h.ops) != "honour") return std::nullopt; // a key would have changed nothing
  const SinkView s(h);
  const int n = v.events.front();
  const auto ex = s.executions(s.idOf(n));
  if (ex.size() < 2 || ex[0]->call->keyHeader || ex[1]->call->keyHeader) return std::nullopt;
  std::string why;
  if (h.sendsOf(n).size() > 1) why = ", the event sent twice by the producer";
  std::vector<int64_t> cited = SinkView::opsOf(*ex[0]);
  for (int64_t op : SinkView::opsOf(*ex[1])) cited.push_back(op);
  return make(kWithoutKeyId, kWithoutKeyName, cited,
              fmt::format("{} called the sink for event {} without a key (execution {}, call {}), and {} called again "
                          "without one (execution {}, call {}){}: with no key the provider cannot tell a repeat, and "
                          "it executed both",
                          s.caller(*ex[0]), n, ex[0]->call->execution, ex[0]->call->id, s.caller(*ex[1]),
                          ex[1]->call->execution, ex[1]->call->id, why),
              kWithoutKeyFix);
}

} // namespace idem::detail::patterns
