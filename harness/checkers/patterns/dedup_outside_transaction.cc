// A dedup mark outside the effect's transaction: the mark (SET NX in Valkey, or a dedup INSERT committed in
// a transaction of its own) took effect, the process was killed before its effect committed (or exited by
// itself when a fault failed the effect's transaction: an error, a dropped connection, a restarted
// server), and the redelivery found the mark and skipped the event: lost.
#include "checkers/patterns/patterns.h"
#include "checkers/tx_statement.h"

#include <fmt/format.h>

#include <algorithm>

namespace idem::detail::patterns {

namespace {

/// The first Valkey mark whose key names the event id after op `after`.
std::string skippedBy(const HistoryView& h, const std::string& id, int64_t after, std::vector<int64_t>& cited) {
  for (const auto& [proc, _] : h.logs) {
    for (const auto& st : stepsOf(h, proc, after)) {
      if (st.step->server != "valkey" || !isMark(*st.step, {}) || st.step->detail.find(id) == std::string::npos)
        continue;
      cited.push_back(st.op);
      return fmt::format("; the redelivery to {} found the mark ({}) and skipped it", proc, st.name());
    }
  }
  return "";
}

/// A PostgreSQL mark's parameters are not in the steps: the redelivery's repeat of it is an INSERT into the
/// same table that inserted no row or was refused as a duplicate key, by a process whose last read before
/// it handed over event n again, after op `after`.
std::string pgSkippedBy(const HistoryView& h, int n, const ops::Step& mark, int64_t after, std::vector<int64_t>& cited) {
  auto sameTable = [&](const ops::Step& s) {
    if (mark.tables.empty() || s.tables.empty()) return s.detail == mark.detail;
    return shareTable(s, mark);
  };
  for (const auto& [proc, _] : h.logs) {
    bool holds = false; // the process's last read handed it event n
    for (const auto& st : stepsOf(h, proc, after)) {
      if (!st.step->delivered.empty()) {
        holds = std::any_of(st.step->delivered.begin(), st.step->delivered.end(), [&](const ops::Delivered& d) {
          auto ev = h.entryEvent.find(d.entry);
          return ev != h.entryEvent.end() && ev->second == n;
        });
        continue;
      }
      if (!holds || st.step->verb != "INSERT" || !sameTable(*st.step)) continue;
      if (!insertedNone(*st.step) && !isDuplicateKey(*st.step)) continue;
      cited.push_back(st.op);
      return fmt::format("; the redelivery to {} found the mark ({} {}) and skipped it", proc, st.name(),
                         isDuplicateKey(*st.step) ? "was refused as a duplicate key" : "inserted no row");
    }
  }
  return "";
}

/// Where a process's work on a delivery ended before its effect: a kill, or an exit of its own (a crash, or
/// the exit after a fault failed its transaction). The harness's own stop at the end is neither.
struct End {
  int64_t op = 0;
  const KillRec* kill = nullptr;
  const ExitRec* exit = nullptr;
};

std::optional<End> endOf(const HistoryView& h, const std::string& process, int64_t after) {
  const KillRec* kill = killOf(h, process, after);
  const ExitRec* exit = nullptr;
  for (const ExitRec& e : h.exits)
    if (e.process == process && e.op > after && (!exit || e.op < exit->op)) exit = &e;
  if (kill && (!exit || kill->op < exit->op)) return End{kill->op, kill, nullptr};
  if (exit && exit->by == "self") return End{exit->op, nullptr, exit};
  return std::nullopt;
}

/// "the kill at after:SET#3 came between them", or for an exit "the fault error:before:COMMIT#3 ended the
/// effect's transaction and c1 exited (exit 1) before it committed" (the last fault on the process between
/// the mark and the exit, when there is one).
std::string endText(const HistoryView& h, const std::string& process, int64_t mark, const End& end,
                    std::vector<int64_t>& cited) {
  if (end.kill) return fmt::format("the kill at {} came between them", end.kill->point);
  std::string fault;
  for (const auto& f : h.otherFaults) {
    if (f.process != process || f.op <= mark || f.op >= end.op) continue;
    fault = f.fault.str();
    cited.push_back(f.op);
  }
  ops::Exit e;
  e.status = end.exit->status;
  e.signal = end.exit->signal;
  return fault.empty()
             ? fmt::format("{} exited ({}) before the effect committed", process, e.text())
             : fmt::format("the fault {} ended the effect's transaction and {} exited ({}) before it committed", fault,
                           process, e.text());
}

/// The fix, with the acknowledgement the run uses; the word on SET NX where Valkey is the broker or holds
/// the mark.
std::string fixText(const HistoryView& h, const ops::Step& mark) {
  const std::string verb = ackVerbOf(h);
  std::string fix = "write the mark in the effect's transaction: BEGIN; INSERT INTO processed_events(event_id) VALUES "
                    "($1) ON CONFLICT DO NOTHING (skip when it inserted no row); apply the effect; COMMIT; then " +
                    ackWords(verb).then;
  if (verb == "XACK" || mark.server == "valkey")
    fix += ". A Valkey SET NX can't join a PostgreSQL transaction: keep the mark in PostgreSQL";
  return fix;
}

} // namespace

Found dedupOutsideTransaction(const HistoryView& h, const Violation& v) {
  if (v.kind != "lost") return std::nullopt;
  const auto keyed = keyedTables(h);
  for (int n : v.events) {
    const std::string id = eventIdOf(h, n);
    for (const DeliveryRec* d : h.deliveriesOf(n)) {
      const auto end = endOf(h, d->process, d->op);
      if (!end) continue;
      const auto held = stepsOf(h, d->process, d->op, end->op);
      for (const auto& st : held) {
        const Mark mark = markOf(*st.step, keyed);
        if (mark == Mark::None || !st.step->reachedServer() || st.step->error) continue;
        std::vector<int64_t> cited{st.op, end->op};
        std::string how;
        if (st.step->server == "valkey") {
          if (id.empty() || st.step->detail.find(id) == std::string::npos) continue;
          // Nothing committed in PostgreSQL between the mark and the end (a write whose transaction the end
          // cut short took no effect).
          if (std::any_of(held.begin(), held.end(), [&](const StepAt& s) {
                if (s.op <= st.op) return false;
                if (isCommit(*s.step)) return committed(*s.step);
                return isWrite(*s.step) && commitOf(h, d->process, s.op, end->op).has_value();
              }))
            continue;
          how = fmt::format("{} marked event {} as processed in Valkey ({}) before its effect", d->process, n, st.name());
        } else {
          auto commit = commitOf(h, d->process, st.op, end->op);
          if (!commit) continue;
          // Its transaction wrote nothing but marks, and no other transaction committed before the end.
          auto txn = stepsOf(h, d->process, -1, commit->op);
          int64_t begin = -1;
          for (const auto& s : txn) {
            if (isBegin(*s.step) || isCommit(*s.step)) begin = s.op;
            else if (opensWithBegin(*s.step)) begin = s.op - 1; // "BEGIN; INSERT …": its statement is the transaction's
          }
          bool onlyMarks = true;
          for (const auto& s : stepsOf(h, d->process, begin, commit->op + 1))
            if (isWrite(*s.step) && !isMark(*s.step, keyed)) onlyMarks = false;
          bool laterCommit = false;
          for (const auto& s : stepsOf(h, d->process, commit->op, end->op))
            if ((isCommit(*s.step) || isWrite(*s.step)) && s.step->reachedServer() && commitOf(h, d->process, s.op, end->op))
              laterCommit = true;
          if (!onlyMarks || laterCommit) continue;
          cited.push_back(commit->op);
          how = commit->op == st.op
                    ? fmt::format("{} committed the dedup mark of event {} on its own ({}, autocommit) before its effect",
                                  d->process, n, st.name())
                    : fmt::format("{} committed the dedup mark of event {} ({}) in its own transaction ({}) before its "
                                  "effect",
                                  d->process, n, st.name(), commit->name());
        }
        std::string skipped = st.step->server == "valkey" ? skippedBy(h, id, end->op, cited)
                                                          : pgSkippedBy(h, n, *st.step, end->op, cited);
        // A statement recognised by its shape alone (an INSERT … ON CONFLICT DO NOTHING may well record
        // something else) is a mark here only when the redelivery is seen to stop at it; so is any mark
        // when the process exited by itself (a kill is the harness's; an exit may have other causes).
        if (skipped.empty() && ((st.step->server == "pg" && mark == Mark::Shape) || !end->kill)) continue;
        return make("dedup-outside-transaction", "dedup mark outside the effect's transaction", cited,
                    fmt::format("{}; {}{}, and event {} was lost", how, endText(h, d->process, st.op, *end, cited),
                                skipped, n),
                    fixText(h, *st.step));
      }
    }
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
