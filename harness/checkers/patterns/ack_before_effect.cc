// Acknowledge before the effect is durable: the process acknowledged an entry, then was killed before
// anything it wrote in PostgreSQL took effect (no write at all, or a transaction the kill cut short before
// its COMMIT), or a fault failed the transaction of its effect (a dropped connection, an error, a restarted
// server); the broker never hands the entry again, the event is lost.
#include "checkers/patterns/patterns.h"
#include "checkers/request_faults.h"

#include <fmt/format.h>

#include <algorithm>

namespace idem::detail::patterns {

Found ackBeforeEffect(const HistoryView& h, const Violation& v) {
  if (v.kind != "lost") return std::nullopt;
  for (int n : v.events) {
    for (const AckRec* acked : h.acksOf(n)) {
      const AckRec& a = *acked;
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
        for (const Op& op : h.ops) {
          const auto* f = op.as<ops::FaultOp>();
          if (!f || op.index <= a.op || (end >= 0 && op.index > end) || op.process != a.process) continue;
          if (!failsTransaction(f->fault)) continue;
          end = op.index;
          cause = faultEvent(f->fault, op.process);
          break;
        }
        if (cause.empty()) continue;
      }
      auto between = stepsOf(h, a.process, a.op, end);
      if (std::any_of(between.begin(), between.end(), [&](const StepAt& s) {
            if (isCommit(*s.step)) return committed(*s.step);
            return isWrite(*s.step) && commitOf(h, a.process, s.op, end).has_value();
          }))
        continue;
      const ops::Step* ack = stepAt(h, a.op);
      const AckWords words = ackWords(ackVerbOf(h));
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
      return make("ack-before-effect", "acknowledge before the effect is durable", cited,
                  fmt::format("{} acknowledged entry {} ({}) before committing its effect{}; {}",
                              a.process, a.entry, ack ? ack->name() : words.noun, before,
                              kill ? fmt::format("{} lost event {}", cause, n)
                                   : fmt::format("then {} and its transaction failed; acknowledged, the entry was never "
                                                 "handed over again: event {} lost",
                                                 cause, n)),
                  fmt::format("apply the effect and COMMIT first, then {}; keep a processed-events row in the "
                              "effect's transaction (INSERT INTO processed_events(event_id) VALUES ($1) ON CONFLICT "
                              "DO NOTHING, skip when it inserted no row) so that the redelivery after a kill between "
                              "COMMIT and {} is harmless",
                              words.thenEntry, words.noun));
    }
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
