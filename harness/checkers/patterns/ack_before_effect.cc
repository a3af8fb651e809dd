// Acknowledge before the effect is durable: the process acknowledged an entry, then was killed before
// anything it wrote in PostgreSQL took effect (no write at all, or a transaction the kill cut short before
// its COMMIT), or a fault failed the transaction of its effect (a dropped connection, an error, a restarted
// server); the broker never hands the entry again, the event is lost. The same order asked of the broker: a
// consumer whose deliveries settle themselves (AMQP no-ack, XREADGROUP … NOACK) killed, or its transaction
// failed, after the delivery and before the effect; or killed while such deliveries were on their way to it.
#include "checkers/diagnosis.h"
#include "checkers/patterns/patterns.h"
#include "checkers/request_faults.h"

#include <fmt/format.h>

#include <algorithm>

namespace idem::detail::patterns {

namespace {

constexpr const char* kSettledFix =
    "consume with manual acknowledgements and acknowledge each entry after its effect's COMMIT; keep a "
    "processed-events row in the effect's transaction (INSERT INTO processed_events(event_id) VALUES ($1) ON "
    "CONFLICT DO NOTHING, skip when it inserted no row) so that the redelivery after a kill between COMMIT and "
    "the acknowledgement is harmless";

/// The acknowledgement is its step's own delivery of the entry (a no-ack push, a NOACK read), read by the
/// process or not.
bool settlesItself(const HistoryView& h, const AckRec& a) {
  const ops::Step* s = stepAt(h, a.op);
  return s && s->delivers(a.entry);
}

/// The first fault on `process` after op `after` (and not after `until`, when it is not -1) that fails the
/// transaction of its effect (a dropped connection, an error, a restarted server); nullptr when none.
const Op* failingFault(const HistoryView& h, const std::string& process, int64_t after, int64_t until) {
  for (const Op& op : h.ops) {
    const auto* f = op.as<ops::FaultOp>();
    if (f && op.index > after && (until < 0 || op.index <= until) && op.process == process && failsTransaction(f->fault))
      return &op;
  }
  return nullptr;
}

/// The last fault on `process` before op `before` that fails the transaction of its effect; nullptr when none.
const Op* lastFailingFault(const HistoryView& h, const std::string& process, int64_t before) {
  const Op* last = nullptr;
  for (const Op& op : h.ops) {
    if (op.index >= before) break;
    const auto* f = op.as<ops::FaultOp>();
    if (f && op.process == process && failsTransaction(f->fault)) last = &op;
  }
  return last;
}

/// Event n lost by a delivery that settled itself: one the process read (its acknowledgement is the
/// delivery's own step), then a kill or a fault that failed its transaction; or one no process read.
Found settledByDelivery(const HistoryView& h, int n) {
  if (const std::string entry = h.settledUnseenEntry(n); !entry.empty()) {
    if (h.kills.empty()) return std::nullopt;
    std::vector<int64_t> cited;
    std::vector<std::string> each;
    for (const KillRec& k : h.kills) {
      cited.push_back(k.op);
      each.push_back(fmt::format("{} at {}", k.process, k.point));
    }
    const KillRec* k = h.settledUnseenKill();
    const std::string cut = k ? fmt::format("{} was killed at {}", k->process, k->point)
                              : fmt::format("{} killed ({})", each.size() == 1 ? "a process was" : "processes were",
                                            listAnd(each));
    return make("ack-before-effect", "acknowledge before the effect is durable", cited,
                fmt::format("the broker settled entry {} (event {}) as it sent it, by a subscription that "
                            "acknowledges on delivery; {} while those deliveries were on their way, and no process "
                            "was handed it again: event {} lost",
                            entry, n, cut, n),
                kSettledFix);
  }
  for (const AckRec* a : h.acksOf(n)) {
    if (!settlesItself(h, *a)) continue; // acknowledged by a step of its own
    const ops::Step* own = stepAt(h, a->op);
    std::string cause;
    int64_t end = -1;
    if (const KillRec* kill = killOf(h, a->process, a->op)) {
      cause = fmt::format("{} was killed at {}", a->process, kill->point);
      end = kill->op;
    } else if (const Op* fault = failingFault(h, a->process, a->op, -1)) {
      cause = faultEvent(fault->as<ops::FaultOp>()->fault, fault->process) + " and its transaction failed";
      end = fault->index;
    }
    if (cause.empty()) continue;
    return make("ack-before-effect", "acknowledge before the effect is durable", {a->op, end},
                fmt::format("{} was handed entry {} (event {}) by {}, a delivery the broker counts as its "
                            "acknowledgement; then {} before the event's effect was durable, and the broker never "
                            "handed it again: event {} lost",
                            a->process, a->entry, n, own->name(), cause, n),
                kSettledFix);
  }
  return std::nullopt;
}

/// Event n lost after `a`: acknowledged by a step of its own (an XACK, or a script that calls XACK when
/// `script`), then a kill, or a fault that failed the transaction of its effect, before the effect was durable.
Found ackedThenLost(const HistoryView& h, const AckRec& a, int n, bool script) {
  // What ended the work on the entry: a kill, or a fault that failed its transaction (a dropped
  // connection, an error, a restarted server) before the process's next acknowledgement.
  const KillRec* kill = killOf(h, a.process, a.op);
  int64_t end = kill ? kill->op : -1;
  std::string cause = kill ? fmt::format("the kill at {}", kill->point) : "";
  if (!kill) {
    for (const auto& st : stepsOf(h, a.process, a.op)) // stop at the next acknowledgement
      if (isAck(*st.step)) {
        end = st.op;
        break;
      }
    const Op* fault = failingFault(h, a.process, a.op, end);
    // An acknowledgement the server had when a fault cut its connection (forwarded, its reply lost: an XACK
    // or EXEC pipelined behind the step the drop hit) is recorded after that fault: the fault before it.
    const ops::Step* own = stepAt(h, a.op);
    if (!fault && own && own->outcome == ops::StepOutcome::Forwarded) fault = lastFailingFault(h, a.process, a.op);
    if (fault) {
      end = fault->index;
      cause = faultEvent(fault->as<ops::FaultOp>()->fault, fault->process);
    }
    if (cause.empty()) return std::nullopt;
  }
  // A write that took effect between `from` and `to` (ops of the process).
  auto committedBetween = [&](int64_t from, int64_t to) {
    auto steps = stepsOf(h, a.process, from, to);
    return std::any_of(steps.begin(), steps.end(), [&](const StepAt& s) {
      if (isCommit(*s.step)) return committed(*s.step);
      return isWrite(*s.step) && commitOf(h, a.process, s.op, to).has_value();
    });
  };
  if (committedBetween(a.op, end)) {
    // Another entry's effect may have committed meanwhile (a batch acknowledged first, then worked one by
    // one): still this order when nothing took effect between the entry's delivery and its acknowledgement.
    int64_t delivered = -1;
    for (const auto& d : h.deliveries)
      if (d.process == a.process && d.entry == a.entry && d.op < a.op) delivered = d.op;
    if (delivered < 0 || committedBetween(delivered, a.op)) return std::nullopt;
  }
  const ops::Step* ack = stepAt(h, a.op);
  const AckWords words = ackWords(ackVerbOf(h));
  // Whether the effect's transaction had begun when the fault came (a PostgreSQL step since the acknowledgement).
  const auto since = stepsOf(h, a.process, a.op, end);
  const bool began = std::any_of(since.begin(), since.end(), [](const StepAt& s) { return s.step->server == "pg"; });
  std::vector<int64_t> cited{a.op, end};
  // The same order for an earlier entry: its acknowledgement, then its effect.
  std::string before;
  const auto earlier = stepsOf(h, a.process, -1, a.op);
  for (size_t i = 0; i < earlier.size() && before.empty(); ++i) {
    if (!isAck(*earlier[i].step)) continue;
    for (size_t j = i + 1; j < earlier.size() && !isAck(*earlier[j].step); ++j) {
      if (!isWrite(*earlier[j].step) && !isCommit(*earlier[j].step)) continue;
      before = fmt::format(" (as it did for entry {}: {}, then {})", newlyAcked(h, earlier[i]).front(),
                           earlier[i].name(), earlier[j].name());
      cited.push_back(earlier[i].op);
      cited.push_back(earlier[j].op);
      break;
    }
  }
  const std::string by = !ack ? words.noun
                         : script ? fmt::format("{}, a Lua script that calls XACK with the entry's id", ack->name())
                                  : ack->name();
  return make("ack-before-effect", "acknowledge before the effect is durable", cited,
              fmt::format("{} acknowledged entry {} ({}) before committing its effect{}; {}", a.process, a.entry, by,
                          before,
                          kill ? fmt::format("{} lost event {}", cause, n)
                               : fmt::format("then {} {}; acknowledged, the entry was never handed over again: event "
                                             "{} lost",
                                             cause, began ? "and its transaction failed" : "before its effect began", n)),
              fmt::format("apply the effect and COMMIT first, then {}{}; keep a processed-events row in the "
                          "effect's transaction (INSERT INTO processed_events(event_id) VALUES ($1) ON CONFLICT "
                          "DO NOTHING, skip when it inserted no row) so that the redelivery after a kill between "
                          "COMMIT and {} is harmless",
                          words.thenEntry, script ? " (call the script that acknowledges after the COMMIT)" : "",
                          words.noun));
}

} // namespace

Found ackBeforeEffect(const HistoryView& h, const Violation& v) {
  if (v.kind != "lost") return std::nullopt;
  for (int n : v.events) {
    for (const AckRec* a : h.acksOf(n)) {
      if (settlesItself(h, *a)) continue; // no acknowledgement to move after the COMMIT: below
      if (auto p = ackedThenLost(h, *a, n, false)) return p;
    }
    for (const AckRec* a : h.scriptAcksOf(n))
      if (auto p = ackedThenLost(h, *a, n, true)) return p;
  }
  for (int n : v.events)
    if (auto p = settledByDelivery(h, n)) return p;
  return std::nullopt;
}

} // namespace idem::detail::patterns
