// Effect without dedup: the effect committed, the process was killed before it acknowledged the entry, and
// the redelivery applied it again; or, with no step of the run recording that an event was processed, the
// event came as several entries and each was applied, or one entry was handed over again (a claim while
// its holder was busy, a broker that forgot its deliveries) and applied after each hand-over.
#include "checkers/patterns/patterns.h"

#include <fmt/format.h>

#include <algorithm>

namespace idem::detail::patterns {

namespace {

std::string dedupFix(const HistoryView& h) {
  return "record the event in the effect's transaction: BEGIN; INSERT INTO processed_events(event_id) VALUES ($1) "
         "ON CONFLICT DO NOTHING; apply the effect only when that inserted a row; COMMIT; then " +
         ackWords(ackVerbOf(h)).then;
}

/// The first write of `process` in (after, before) that committed: the write and its commit.
std::optional<std::pair<StepAt, StepAt>> committedWrite(const HistoryView& h, const std::string& process,
                                                        int64_t after, int64_t before) {
  for (const auto& st : stepsOf(h, process, after, before)) {
    if (!isWrite(*st.step)) continue;
    if (auto c = commitOf(h, process, st.op, before)) return std::make_pair(st, *c);
  }
  return std::nullopt;
}

/// The entry of d's read that its process was working on when killed: the first one it had not acknowledged
/// before the kill (a batch is worked through in order); "" when the read is not found.
std::string workedOn(const HistoryView& h, const DeliveryRec& d, int64_t kill) {
  const ops::Step* read = stepAt(h, d.op);
  if (!read) return "";
  for (const auto& e : read->delivered)
    if (!h.ackBy(d.process, e.entry, d.op, kill)) return e.entry;
  return "";
}

} // namespace

Found effectWithoutDedup(const HistoryView& h, const Violation& v) {
  if (v.kind != "duplicate") return std::nullopt;
  for (int n : v.events) {
    const auto ds = h.deliveriesOf(n);
    // A kill between the effect's COMMIT and the acknowledgement, then a redelivery: the most telling
    // story, for whichever event of the violation has it.
    for (const DeliveryRec* d : ds) {
      const KillRec* kill = killOf(h, d->process, d->op);
      if (!kill || h.ackBy(d->process, d->entry, d->op, kill->op)) continue;
      // Work of several entries at once on a pool's connections: which one a COMMIT was for is not known.
      if (overlappingTransactions(h, d->process, d->op, kill->op)) continue;
      // The effect after the last acknowledgement is another entry's when one before it in the batch was
      // still unacknowledged (the producer's retry of an event, later in the batch, not yet reached).
      if (const std::string on = workedOn(h, *d, kill->op); !on.empty() && on != d->entry) continue;
      // The effect committed after the last acknowledgement before the kill (the work on this entry).
      int64_t from = d->op;
      for (const auto& st : stepsOf(h, d->process, d->op, kill->op))
        if (isAck(*st.step)) from = st.op;
      auto w = committedWrite(h, d->process, from, kill->op);
      if (!w) continue;
      auto again = std::find_if(ds.begin(), ds.end(), [&](const DeliveryRec* r) { return r->op > kill->op; });
      if (again == ds.end()) continue;
      const std::string step = w->first.op == w->second.op ? w->first.name() : w->second.name();
      return make("effect-without-dedup", "effect without dedup", {w->first.op, w->second.op, kill->op, (*again)->op},
                  fmt::format("{} committed the effect of event {} ({}) and was killed at {} before acknowledging "
                              "entry {}; the redelivery to {} ({}) applied it again: nothing recorded that the "
                              "event was processed",
                              d->process, n, step, kill->point, d->entry, (*again)->process, (*again)->label),
                  dedupFix(h));
    }
  }
  // Then, with no kill between an effect and its acknowledgement for any of the events: no dedup step
  // anywhere in the run that took effect (a mark its transaction rolled back, or a ROLLBACK TO its
  // savepoint undid, recorded nothing).
  for (int n : v.events) {
    const auto ds = h.deliveriesOf(n);
    if (std::any_of(h.ops.begin(), h.ops.end(), [&h, keyed = keyedTables(h)](const Op& op) {
          const auto* s = op.as<ops::Step>();
          return s && isMark(*s, keyed) && commitOf(h, op.process, op.index).has_value();
        }))
      continue;
    // Several entries of one event, each applied (a write that took effect after each one's delivery).
    const auto sends = h.sendsOf(n);
    if (sends.size() < 2) {
      // One entry handed over more than once, a write that took effect after each hand-over. Which write
      // applied it is not told: with several writes per entry, the order of a batch's writes says too little.
      std::vector<int64_t> cited;
      std::vector<std::string> reads;
      for (const DeliveryRec* d : ds) {
        if (!writeFor(h, *d)) continue;
        cited.push_back(d->op);
        reads.push_back(fmt::format("{} to {}", d->label, d->process));
      }
      if (cited.size() < 2) continue;
      std::string handed;
      for (size_t i = 0; i < reads.size(); ++i) handed += (i ? (i + 1 == reads.size() ? " and " : ", ") : "") + reads[i];
      return make("effect-without-dedup", "effect without dedup", cited,
                  fmt::format("entry {} of event {} was handed over {} times ({}) and applied after each: no step "
                              "of the run records that an event was processed",
                              ds.front()->entry, n, cited.size(), handed),
                  dedupFix(h));
    }
    std::vector<std::string> entries;
    std::vector<int64_t> cited;
    for (const SendRec* s : sends) {
      entries.push_back(s->entry);
      cited.push_back(s->op);
    }
    std::vector<std::string> applied, writes, appliedEntries;
    for (const DeliveryRec* d : ds) {
      cited.push_back(d->op);
      if (std::find(applied.begin(), applied.end(), d->process) == applied.end()) applied.push_back(d->process);
      if (auto w = writeFor(h, *d)) {
        cited.push_back(w->op);
        writes.push_back(w->name());
        if (std::find(appliedEntries.begin(), appliedEntries.end(), d->entry) == appliedEntries.end())
          appliedEntries.push_back(d->entry);
      }
    }
    auto joined = [](const std::vector<std::string>& ws) {
      std::string out;
      for (size_t i = 0; i < ws.size(); ++i) out += (i ? (i + 1 == ws.size() ? " and " : ", ") : "") + ws[i];
      return out;
    };
    if (appliedEntries.size() < 2) {
      // Deliveries worked on at once (a prefetch handed to a pool, acknowledged as each finishes): the next
      // delivery comes before the last one's write, so no write can be told as an entry's. Still the story
      // when every entry of the event reached a process that committed a write after it.
      std::vector<std::string> labels;
      const bool each = std::all_of(sends.begin(), sends.end(), [&](const SendRec* s) {
        return std::any_of(ds.begin(), ds.end(), [&](const DeliveryRec* d) {
          if (d->entry != s->entry || !committedWrite(h, d->process, d->op, kNoOp)) return false;
          labels.push_back(fmt::format("{} to {}", d->label, d->process));
          return true;
        });
      });
      if (!each) continue;
      return make("effect-without-dedup", "effect without dedup", cited,
                  fmt::format("event {} came as {} entries ({}), each delivered ({}) to a consumer that went on to "
                              "commit writes, and was applied more than once: no step of the run records that an "
                              "event was processed",
                              n, entries.size(), joined(entries), joined(labels)),
                  dedupFix(h));
    }
    return make("effect-without-dedup", "effect without dedup", cited,
                fmt::format("event {} came as {} entries ({}) and {} applied each{}: no step of the run records that "
                            "an event was processed",
                            n, entries.size(), joined(entries), applied.size() == 1 ? applied[0] : "the consumers",
                            writes.size() == entries.size() ? " (" + joined(writes) + ")" : ""),
                dedupFix(h));
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
