// Check-then-act: two processes held one event at once; each SELECTed to see whether it was applied before
// the other's record was committed, and with no unique constraint (no ON CONFLICT) both inserts went in.
// Also one process that held two copies at once and worked on them on two connections of a pool.
#include "checkers/diagnosis.h"
#include "checkers/patterns/patterns.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace idem::detail::patterns {

namespace {

const char* kFix = "let the database decide: a unique constraint on the event id (ALTER TABLE processed_events ADD "
                   "PRIMARY KEY (event_id)) and INSERT … ON CONFLICT DO NOTHING in the effect's transaction, applying "
                   "the effect only when it inserted a row; or SELECT … FOR UPDATE on a row that exists for the key";

/// A check and its insert: the first SELECT on PostgreSQL in (after, before) and the first INSERT after it
/// (a pool may run them on two connections), or both on connection `conn` when it is not 0.
struct Work {
  std::string process;
  StepAt select, insert;
};

std::optional<Work> workOf(const HistoryView& h, const std::string& process, int64_t after, int64_t before, int conn = 0) {
  std::optional<StepAt> select, insert;
  for (const auto& st : stepsOf(h, process, after, before)) {
    if (st.step->server != "pg" || (conn != 0 && st.step->conn != conn)) continue;
    if (!select && st.step->verb == "SELECT") select = st;
    else if (select && !insert && st.step->verb == "INSERT") insert = st;
  }
  if (!select || !insert || says(*insert->step, "ON CONFLICT")) return std::nullopt;
  return Work{process, *select, *insert};
}

std::string done(const StepAt& insert, const StepAt& commit) {
  return insert.op == commit.op ? insert.name() : insert.name() + ", " + commit.name();
}

/// One process held two copies of event n at once (the second delivered before it acknowledged the first)
/// and checked for them on two connections, each before the other's record was committed. Told apart only
/// while no other event was delivered to it meanwhile: its transactions could then be that event's.
Found oneProcess(const HistoryView& h, int n) {
  const auto copies = h.deliveriesOf(n);
  for (size_t i = 0; i < copies.size(); ++i) {
    for (size_t j = i + 1; j < copies.size(); ++j) {
      const DeliveryRec& a = *copies[i];
      const DeliveryRec& b = *copies[j];
      if (a.process != b.process) continue; // two entries of the event, or one handed to it twice
      const AckRec* ackA = h.ackBy(a.process, a.entry, a.op, kNoOp);
      if (ackA && ackA->op < b.op) continue; // not held at once
      const AckRec* ackB = h.ackBy(b.process, b.entry, b.op, kNoOp);
      const int64_t until = std::max(ackA ? ackA->op : kNoOp, ackB ? ackB->op : kNoOp);
      if (std::any_of(h.deliveries.begin(), h.deliveries.end(), [&](const DeliveryRec& d) {
            return d.n > 0 && d.n != n && d.process == a.process && d.op > a.op && d.op < until;
          }))
        continue;
      // The first check after the first copy, and the first on another connection, each on its own.
      std::optional<Work> first, second;
      for (const auto& st : stepsOf(h, a.process, a.op, until)) {
        if (st.step->server != "pg" || st.step->verb != "SELECT") continue;
        if (!first) first = workOf(h, a.process, a.op, until, st.step->conn);
        else if (!second && st.step->conn != first->select.step->conn) second = workOf(h, a.process, a.op, until, st.step->conn);
      }
      if (!first || !second) continue;
      auto fc = commitOf(h, a.process, first->insert.op);
      auto sc = commitOf(h, a.process, second->insert.op);
      if (!fc || !sc || first->select.op > sc->op || second->select.op > fc->op) continue;
      return make("check-then-act", "check-then-act",
                  {a.op, b.op, first->select.op, second->select.op, first->insert.op, second->insert.op, fc->op, sc->op},
                  fmt::format("{} held two copies of event {} at once ({}, {}) and worked on them on two connections: "
                              "each checked ({}, {}) before the other's record was committed ({}; {}); with no unique "
                              "constraint both inserts went in and both applied it",
                              a.process, n, a.label, b.label, first->select.name(), second->select.name(),
                              done(first->insert, *fc), done(second->insert, *sc)),
                  kFix);
    }
  }
  return std::nullopt;
}

} // namespace

Found checkThenAct(const HistoryView& h, const Violation& v) {
  if (v.kind != "duplicate") return std::nullopt;
  for (int n : v.events) {
    if (interleaving(h, {n}, {n}).text.empty()) {
      if (auto one = oneProcess(h, n)) return one;
      continue;
    }
    // Per process holding the event: its first SELECT after the delivery, then its first INSERT after that.
    std::vector<Work> works;
    std::set<std::string> seen;
    for (const DeliveryRec* d : h.deliveriesOf(n)) {
      if (!seen.insert(d->process).second) continue;
      const AckRec* ack = h.ackBy(d->process, d->entry, d->op, kNoOp);
      if (auto w = workOf(h, d->process, d->op, ack ? ack->op : kNoOp)) works.push_back(std::move(*w));
    }
    if (works.size() < 2) continue;
    const Work& a = works[0];
    const Work& b = works[1];
    // Each checked before the other's record was committed (READ COMMITTED: an INSERT not yet committed is
    // not seen), so neither SELECT found the other's row.
    auto ac = commitOf(h, a.process, a.insert.op);
    auto bc = commitOf(h, b.process, b.insert.op);
    if (!ac || !bc || a.select.op > bc->op || b.select.op > ac->op) continue;
    return make("check-then-act", "check-then-act", {a.select.op, b.select.op, a.insert.op, b.insert.op, ac->op, bc->op},
                fmt::format("{} and {} both checked for event {} ({} {}, {} {}) before the other's record was "
                            "committed ({} {}; {} {}); with no unique constraint both inserts went in and both "
                            "applied it",
                            a.process, b.process, n, a.process, a.select.name(), b.process, b.select.name(), a.process,
                            done(a.insert, *ac), b.process, done(b.insert, *bc)),
                kFix);
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
