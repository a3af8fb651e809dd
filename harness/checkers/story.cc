#include "checkers/diagnosis.h"
#include "history/trace.h"
#include "plan/fault_kind.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <set>

namespace idem::detail {

namespace {

constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();

/// Tells what followed one delivery to its process: an acknowledgement (for lost events), or a kill of
/// the process before it acknowledged the entry.
class Teller {
public:
  Teller(const HistoryView& h, bool lost, Story& st) : h_(h), lost_(lost), st_(st) {}

  /// The clause after delivery `d` (of which `later` is the next delivery of the same entry to the same
  /// process, or kEnd).
  std::string after(const DeliveryRec& d, int64_t later) {
    std::string out;
    const AckRec* ack = h_.ackBy(d.process, d.entry, d.op, later);
    const KillRec* kill = h_.killAfter(d.process, d.op);
    if (kill && kill->op > later) kill = nullptr;
    // A kill after the acknowledgement is no part of this delivery's story, unless the event was lost and
    // the process acknowledged nothing else before the kill: acknowledged first, killed before (or while)
    // it worked on the effect.
    if (kill && ack && ack->op < kill->op && !(lost_ && !otherAckBetween(d.process, d.entry, ack->op, kill->op)))
      kill = nullptr;
    if (ack && lost_) {
      // A discard (an AMQP reject or nack without requeue, a NATS +TERM) settles the entry too: the broker
      // drops it.
      const auto* st = h_.ops[static_cast<size_t>(ack->op)].as<ops::Step>();
      if (st && st->discards)
        out += fmt::format(" and discarded by {} ({}#{}): the broker dropped it without effect", d.process,
                           st->verb, st->k);
      else
        out += fmt::format(" and acknowledged by {} without effect", d.process);
      st_.ops.push_back(ack->op);
    }
    // Other faults on the process while it held the entry (until its acknowledgement or its next delivery;
    // a forget, until the next delivery it caused): what made it redo the work, or hand the entry again.
    out += faultsBetween(d.process, d.op, later, !ack ? later : std::min(later, ack->op));
    if (kill && !killsTold_.count(kill->op)) {
      killsTold_.insert(kill->op);
      out += fmt::format(", {} killed at {}", d.process, kill->point);
      st_.ops.push_back(kill->op);
      if (st_.kill_point.empty()) st_.kill_point = kill->point;
    }
    return out;
  }

  /// The faults other than kills that acted on `process` in (from, until], and the forgets in (from,
  /// forgetsUntil]: ", c1's connection dropped at drop:after:COMMIT#1", each told once.
  std::string faultsBetween(const std::string& process, int64_t from, int64_t forgetsUntil, int64_t until) {
    std::string out;
    for (const auto& f : h_.otherFaults) {
      const bool forget = f.fault.kind == "forget"; // the broker's: told to every process
      if (f.op <= from || f.op > (forget ? forgetsUntil : until) || (!forget && f.process != process) ||
          faultsTold_.count(f.op))
        continue;
      faultsTold_.insert(f.op);
      out += ", " + faultClause(f, process);
      st_.ops.push_back(f.op);
    }
    return out;
  }

  /// Ops told elsewhere in the story (the holds an interleaving names): not told again here.
  void told(const std::vector<int64_t>& ops) { faultsTold_.insert(ops.begin(), ops.end()); }

private:
  /// "c1's connection dropped at drop:after:COMMIT#1", "the broker forgot what the group had acknowledged at
  /// forget:…".
  static std::string faultClause(const HistoryView::FaultRec& f, const std::string& process) {
    return faultKind(f.fault.kind, "fault").phrase(f.fault, process, serverTitle);
  }

  /// Whether `proc` acknowledged another entry than `entry` in (from, to).
  bool otherAckBetween(const std::string& proc, const std::string& entry, int64_t from, int64_t to) const {
    return std::any_of(h_.acks.begin(), h_.acks.end(), [&](const AckRec& a) {
      return a.process == proc && a.entry != entry && a.op > from && a.op < to;
    });
  }

  const HistoryView& h_;
  bool lost_;
  Story& st_;
  std::set<int64_t> killsTold_, faultsTold_;
};

int64_t nextDelivery(const std::vector<const DeliveryRec*>& ds, size_t i) {
  for (size_t j = i + 1; j < ds.size(); ++j) {
    if (ds[j]->process == ds[i]->process && ds[j]->entry == ds[i]->entry) return ds[j]->op;
  }
  return kEnd;
}

bool killBetween(const HistoryView& h, const std::string& proc, int64_t from, int64_t to) {
  const KillRec* k = h.killAfter(proc, from);
  return k && k->op < to;
}

} // namespace

Story eventStory(const HistoryView& h, int n, bool lost) {
  Story st;
  std::vector<std::string> parts;
  auto sends = h.sendsOf(n);
  for (const SendRec* s : sends) {
    st.ops.push_back(s->op);
    st.entries.push_back(s->entry);
  }
  if (sends.size() > 1)
    parts.push_back(fmt::format("sent {} by the producer (entries {})", times(static_cast<int>(sends.size())),
                                listAnd(st.entries)));
  auto ds = h.deliveriesOf(n);
  for (const DeliveryRec* d : ds) st.ops.push_back(d->op);
  // Processes that worked on it at once: told last, with the holds that acted meanwhile (told only there).
  Story together = interleaving(h, {n}, {n});
  Teller teller(h, lost, st);
  teller.told(together.ops);
  std::set<std::string> procs;
  for (const DeliveryRec* d : ds) procs.insert(d->process);

  // Acknowledged by a read whose reply never reached the process (XREADGROUP … NOACK, killed after it): the
  // broker delivered it and counts it done.
  const AckRec* unseenAck = nullptr;
  if (ds.empty())
    for (const AckRec& a : h.acks)
      if (std::find(st.entries.begin(), st.entries.end(), a.entry) != st.entries.end()) {
        unseenAck = &a;
        break;
      }
  if (unseenAck) {
    std::string step;
    for (const Op& op : h.ops)
      if (op.index == unseenAck->op)
        if (const auto* s = op.as<ops::Step>()) step = s->name();
    parts.push_back(fmt::format("acknowledged by {}'s {} before any delivery of it reached a process", unseenAck->process,
                                step.empty() ? "step" : step));
    st.ops.push_back(unseenAck->op);
  } else if (ds.empty() && h.settledUnseen(n)) {
    std::string clause = "settled by a delivery no process read";
    if (const KillRec* k = h.settledUnseenKill()) { // the kill that cut its connection
      clause += fmt::format(" ({} killed at {})", k->process, k->point);
      st.ops.push_back(k->op);
      if (st.kill_point.empty()) st.kill_point = k->point;
    }
    parts.push_back(std::move(clause));
  } else if (ds.empty()) {
    parts.push_back(h.neverDelivered(n) ? "never delivered" : "no delivery of it was recorded");
  } else if (procs.size() == 1 && !killBetween(h, ds.front()->process, ds.front()->op, ds.back()->op)) {
    // One process saw every delivery: "delivered to c1 both times (XREADGROUP#1)".
    std::vector<std::string> labels;
    for (const DeliveryRec* d : ds) {
      if (std::find(labels.begin(), labels.end(), d->label) == labels.end()) labels.push_back(d->label);
    }
    std::string count;
    if (ds.size() > 1 && ds.size() == sends.size()) count = ds.size() == 2 ? " both times" : fmt::format(" all {} times", ds.size());
    else if (ds.size() > 1) count = fmt::format(" {}", times(static_cast<int>(ds.size())));
    std::string clause = fmt::format("delivered to {}{} ({})", ds.front()->process, count, fmt::join(labels, ", "));
    clause += teller.faultsBetween(ds.front()->process, ds.front()->op, ds.back()->op, ds.back()->op);
    clause += teller.after(*ds.back(), kEnd);
    parts.push_back(clause);
  } else {
    std::set<std::string> seen;
    std::string clause;
    // The entries one read handed over together are told together, then what came after them: a kill after
    // a batch never reads as coming before the batch's second entry.
    for (size_t i = 0; i < ds.size();) {
      size_t j = i;
      for (; j < ds.size() && ds[j]->op == ds[i]->op && ds[j]->process == ds[i]->process; ++j) {
        const DeliveryRec& d = *ds[j];
        std::string verb = j == 0 ? "delivered to" : seen.count(d.entry) ? "redelivered to"
                                                                          : fmt::format("delivered again (entry {}) to", d.entry);
        seen.insert(d.entry);
        clause += fmt::format("{}{} {} ({})", j ? ", " : "", verb, d.process, d.label);
      }
      for (size_t k = i; k < j; ++k) clause += teller.after(*ds[k], nextDelivery(ds, k));
      i = j;
    }
    parts.push_back(clause);
  }
  if (!ds.empty() && !h.acked(n)) parts.push_back("never acknowledged");
  if (!together.text.empty()) {
    parts.push_back(together.text);
    st.ops.insert(st.ops.end(), together.ops.begin(), together.ops.end());
  }
  st.text = fmt::format("{}", fmt::join(parts, ", "));
  return st;
}

std::string times(int k) {
  if (k == 1) return "once";
  if (k == 2) return "twice";
  return fmt::format("{} times", k);
}

std::string listAnd(const std::vector<std::string>& words) {
  if (words.empty()) return "";
  if (words.size() == 1) return words[0];
  std::string out;
  for (size_t i = 0; i + 1 < words.size(); ++i) out += (i ? ", " : "") + words[i];
  return out + " and " + words.back();
}

std::string listNumbers(const std::vector<int>& ns) {
  std::vector<std::string> w;
  for (int n : ns) w.push_back(std::to_string(n));
  return listAnd(w);
}

void cite(Violation& v, const Story& s) {
  v.ops.insert(v.ops.end(), s.ops.begin(), s.ops.end());
  v.entries.insert(v.entries.end(), s.entries.begin(), s.entries.end());
  if (v.kill_point.empty()) v.kill_point = s.kill_point;
}

void tidy(Violation& v) {
  auto uniq = [](auto& vec) {
    std::sort(vec.begin(), vec.end());
    vec.erase(std::unique(vec.begin(), vec.end()), vec.end());
  };
  uniq(v.ops);
  uniq(v.events);
  uniq(v.candidates);
  // entries keep their stream order (ids sort as text wrongly: 1-10 < 1-2); only drop repeats
  std::vector<std::string> seen;
  for (const auto& e : v.entries) {
    if (std::find(seen.begin(), seen.end(), e) == seen.end()) seen.push_back(e);
  }
  v.entries = seen;
}

} // namespace idem::detail
