// A key per attempt, not per event (sink). A consumer that makes its Idempotency-Key afresh for each call
// (a random UUID per request, a key that counts its attempts) sends a retry, after a dropped connection, an
// error or a timeout, or a call after a redelivery, under a key the provider has not seen: a provider that
// honours keys executes it as a new charge. The steps show it as two calls of one event under different keys
// (one of them may carry none) with no kill between its call and its COMMIT to explain the second (that is
// sink-call-commit-order, which comes first).
#include "checkers/detail.h"
#include "checkers/patterns/patterns.h"
#include "checkers/sink_view.h"

#include <fmt/format.h>

#include <algorithm>

namespace idem::detail::patterns {

namespace {

const char* kPerAttemptId = "sink-key-per-attempt";
const char* kPerAttemptName = "a key per attempt, not per event (sink)";
const char* kPerAttemptFix =
    "derive the Idempotency-Key from the event (its id, or a hash of the id and what the call is for), never "
    "from the attempt: every call of one event, its retries and the calls after a redelivery carry the same key, "
    "and the provider replays the first answer";

/// One call of the event: a record the sink received (with the CALL step that carried it when one matches),
/// or a CALL step the sink never received.
struct Attempt {
  int64_t op = 0;         ///< the step's op, else the record's
  std::string key;        ///< "key 'k'" or "no key"
  std::string who;        ///< "c1 at CALL#2", "a caller"
  std::vector<int64_t> ops;
};

std::vector<Attempt> attemptsOf(const SinkView& s, const std::string& ref, bool executedOnly) {
  std::vector<Attempt> out;
  for (const SinkCall* c : executedOnly ? s.executions(ref) : s.callsOf(ref)) {
    Attempt a;
    a.ops = SinkView::opsOf(*c);
    a.op = a.ops.front(); // the step's op, else the record's
    a.key = c->call->keyHeader ? "key '" + c->call->key + "'" : "no key";
    a.who = s.caller(*c);
    out.push_back(std::move(a));
  }
  if (!executedOnly)
    for (const CallStep* st : s.stepsOf(ref))
      if (st->callOp < 0 && !st->keyCut && !st->step->reachedServer())
        out.push_back(Attempt{st->op, st->keyed ? "key '" + st->key + "'" : "no key",
                              SinkView::caller(*st), {st->op}});
  std::sort(out.begin(), out.end(), [](const Attempt& a, const Attempt& b) { return a.op < b.op; });
  return out;
}

} // namespace

Found sinkKeyPerAttempt(const HistoryView& h, const Violation& v) {
  const bool changed = v.invariant == "sink:key-stable" && v.kind == "key-changed";
  const bool twice = v.invariant == "sink:exactly-once" && v.kind == "charged-twice";
  if ((!changed && !twice) || v.events.size() != 1) return std::nullopt;
  if (sinkPolicyOf(h.scenario, h.ops) != "honour") return std::nullopt; // keys are not judged otherwise
  const SinkView s(h);
  const int n = v.events.front();
  // charged-twice: two executions under different keys; key-changed: any two calls.
  const auto attempts = attemptsOf(s, s.idOf(n), twice);
  for (size_t i = 0; i < attempts.size(); ++i)
    for (size_t j = i + 1; j < attempts.size(); ++j) {
      const Attempt& a = attempts[i];
      const Attempt& b = attempts[j];
      if (a.key == b.key) continue;
      std::vector<int64_t> cited = a.ops;
      cited.insert(cited.end(), b.ops.begin(), b.ops.end());
      return make(kPerAttemptId, kPerAttemptName, cited,
                  fmt::format("{} called the sink for event {} with {}, and {} with {}{}: the key changes with "
                              "the call, so a provider that honours keys takes the second for a new charge",
                              a.who, n, a.key, b.who, b.key, twice ? ", and both executed" : ""),
                  kPerAttemptFix);
    }
  return std::nullopt;
}

} // namespace idem::detail::patterns
