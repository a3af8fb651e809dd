// Check-then-act: two processes held one event at once; each SELECTed to see whether it was applied before
// the other's record was committed, and with no unique constraint (no ON CONFLICT) both inserts went in.
#include "checkers/diagnosis.h"
#include "checkers/patterns/patterns.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace idem::detail::patterns {

Found checkThenAct(const HistoryView& h, const Violation& v) {
  if (v.kind != "duplicate") return std::nullopt;
  for (int n : v.events) {
    if (interleaving(h, {n}, {n}).text.empty()) continue;
    // Per process holding the event: its first SELECT after the delivery, then its first INSERT after that.
    struct Work {
      std::string process;
      StepAt select, insert;
    };
    std::vector<Work> works;
    std::set<std::string> seen;
    for (const DeliveryRec* d : h.deliveriesOf(n)) {
      if (!seen.insert(d->process).second) continue;
      const AckRec* ack = h.ackBy(d->process, d->entry, d->op, kNoOp);
      std::optional<StepAt> select, insert;
      for (const auto& st : stepsOf(h, d->process, d->op, ack ? ack->op : kNoOp)) {
        if (!select && st.step->server == "pg" && st.step->verb == "SELECT") select = st;
        else if (select && !insert && st.step->verb == "INSERT" && st.step->server == "pg") insert = st;
      }
      if (select && insert && !says(*insert->step, "ON CONFLICT")) works.push_back({d->process, *select, *insert});
    }
    if (works.size() < 2) continue;
    const Work& a = works[0];
    const Work& b = works[1];
    // Each checked before the other's record was committed (READ COMMITTED: an INSERT not yet committed is
    // not seen), so neither SELECT found the other's row.
    auto ac = commitOf(h, a.process, a.insert.op);
    auto bc = commitOf(h, b.process, b.insert.op);
    if (!ac || !bc || a.select.op > bc->op || b.select.op > ac->op) continue;
    auto done = [](const StepAt& insert, const StepAt& commit) {
      return insert.op == commit.op ? insert.name() : insert.name() + ", " + commit.name();
    };
    return make("check-then-act", "check-then-act", {a.select.op, b.select.op, a.insert.op, b.insert.op, ac->op, bc->op},
                fmt::format("{} and {} both checked for event {} ({} {}, {} {}) before the other's record was "
                            "committed ({} {}; {} {}); with no unique constraint both inserts went in and both "
                            "applied it",
                            a.process, b.process, n, a.process, a.select.name(), b.process, b.select.name(), a.process,
                            done(a.insert, *ac), b.process, done(b.insert, *bc)),
                "let the database decide: a unique constraint on the event id (ALTER TABLE processed_events ADD "
                "PRIMARY KEY (event_id)) and INSERT … ON CONFLICT DO NOTHING in the effect's transaction, applying "
                "the effect only when it inserted a row; or SELECT … FOR UPDATE on a row that exists for the key");
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
