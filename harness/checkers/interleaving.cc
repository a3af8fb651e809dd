/// Two processes working on the same event at once, told as the interleaving of their steps.
///
/// A process works on an entry from its delivery (or, when it acknowledged another entry since, from that
/// acknowledgement: a consumer that handles the entries of one read one at a time works on this one only
/// after the one before) to its acknowledgement of the entry, or to its death, or to the next delivery of
/// the entry to it. Two such spans of different processes overlap when each one's delivery came before the
/// other's end: both had the event in hand, unacknowledged, alive. The steps listed are each process's work
/// in its own span — PostgreSQL and Valkey requests, its acknowledgement included; reads of the stream and
/// the set-up the URL imposes left out — named by the process's own count of the verb (`c2 COMMIT#1` is
/// c2's first COMMIT: the step `c2:before:COMMIT#1` names in a fault), in history order.
#include "checkers/diagnosis.h"
#include "checkers/holds.h"
#include "history/trace.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace idem::detail {

namespace {

constexpr size_t kListedSteps = 12;

struct WorkSpan {
  std::string process;
  int n = 0;
  int64_t delivery = 0;
  int64_t from = 0; ///< work after this op ...
  int64_t to = 0;   ///< ... up to this one (its acknowledgement), included
};

struct WorkStep {
  int64_t op = 0;
  std::string process;
  std::string label; ///< "c1 COMMIT#2": the process's own second COMMIT
};

bool streamRead(const ops::Step& s) {
  static const std::set<std::string> reads{"XREADGROUP", "XREAD",  "XAUTOCLAIM", "XCLAIM", "XPENDING",
                                           "XINFO",      "XRANGE", "XREVRANGE",  "XLEN"};
  // Any broker's read as the history records it (deliveries, an empty or blocking read); Valkey's by verb too.
  return (s.server == "valkey" && reads.count(s.verb)) || !s.delivered.empty() || s.empty || s.blocking;
}

/// Not the event's work: reads of the stream, set-up the URL imposes, connections, pings.
bool workStep(const ops::Step& s) {
  if (s.verb == "CONNECT" || setUpStep(s) || streamRead(s)) return false;
  return !(s.server == "valkey" && (s.verb == "PING" || s.verb == "HELLO" || s.verb == "CLIENT"));
}

class Interleaver {
public:
  explicit Interleaver(const HistoryView& h) : h_(h) {
    // Per process and verb, the run's k of each step in request order: its rank is the process's own k.
    // (Connection set-up is numbered apart from the target's own steps: history/trace.h setUpCommand.)
    auto counted = [](const ops::Step& s) { return stepCounter(s.verb, setUpStep(s)); };
    std::map<std::pair<std::string, std::string>, std::vector<int>> ks;
    for (const Op& op : h.ops)
      if (const auto* s = op.as<ops::Step>()) ks[{op.process, counted(*s)}].push_back(s->k);
    for (auto& [key, v] : ks) std::sort(v.begin(), v.end());
    for (const Op& op : h.ops) {
      const auto* s = op.as<ops::Step>();
      if (!s || !workStep(*s)) continue;
      const auto& v = ks[{op.process, counted(*s)}];
      auto own = std::lower_bound(v.begin(), v.end(), s->k) - v.begin() + 1;
      steps_.push_back({op.index, op.process, fmt::format("{} {}#{}", op.process, s->verb, own)});
    }
    for (const auto& k : h.kills) deaths_.emplace_back(k.process, k.op);
    for (const auto& e : h.exits) deaths_.emplace_back(e.process, e.op);
    holds_ = holdsOf(h.ops);
  }

  /// The spans in which processes worked on the deliveries of events `ns`.
  std::vector<WorkSpan> spans(const std::vector<int>& ns) const {
    std::vector<const DeliveryRec*> ds;
    for (int n : ns)
      for (const DeliveryRec* d : h_.deliveriesOf(n)) ds.push_back(d);
    std::vector<WorkSpan> out;
    for (const DeliveryRec* d : ds) {
      int64_t bound = std::numeric_limits<int64_t>::max();
      for (const auto& [proc, at] : deaths_)
        if (proc == d->process && at > d->op) bound = std::min(bound, at);
      for (const auto& o : h_.deliveries)
        if (o.process == d->process && o.entry == d->entry && o.op > d->op) bound = std::min(bound, o.op);
      const AckRec* ack = h_.ackBy(d->process, d->entry, d->op, bound);
      WorkSpan w{d->process, d->n, d->op, d->op, ack ? ack->op : bound};
      for (const auto& a : h_.acks)
        if (a.process == d->process && a.op > w.from && a.op < w.to) w.from = a.op;
      out.push_back(w);
    }
    std::sort(out.begin(), out.end(), [](const WorkSpan& a, const WorkSpan& b) { return a.from < b.from; });
    return out;
  }

  /// The work steps of `w`'s process in (from, to].
  std::vector<const WorkStep*> work(const WorkSpan& w, int64_t from, int64_t to) const {
    std::vector<const WorkStep*> out;
    for (const auto& s : steps_)
      if (s.process == w.process && s.op > from && s.op <= to) out.push_back(&s);
    return out;
  }

  /// The clause of two overlapping spans, or "" when they did not work at once.
  std::string tell(const WorkSpan& a, const WorkSpan& b, Story& st) const {
    const int64_t lo = std::max(a.from, b.from), hi = std::min(a.to, b.to);
    if (lo >= hi) return "";
    auto both = work(a, a.from, a.to);
    auto theirs = work(b, b.from, b.to);
    if (both.empty() || theirs.empty()) return "";
    // Something was done while both had it in hand.
    bool during = false;
    for (const auto* list : {&both, &theirs})
      for (const WorkStep* s : *list) during = during || (s->op > lo && s->op <= hi);
    if (!during) return "";
    both.insert(both.end(), theirs.begin(), theirs.end());
    std::sort(both.begin(), both.end(), [](const WorkStep* x, const WorkStep* y) { return x->op < y->op; });
    std::vector<std::string> labels;
    for (const WorkStep* s : both) {
      if (labels.size() == kListedSteps) {
        labels.push_back("…");
        break;
      }
      labels.push_back(s->label);
      st.ops.push_back(s->op);
    }
    std::string who = a.n == b.n ? fmt::format("{} and {} both worked on event {} at once", a.process, b.process, a.n)
                                 : fmt::format("{} worked on event {} and {} on event {} at once", a.process, a.n,
                                               b.process, b.n);
    std::string out = fmt::format("{}: {}", who, fmt::join(labels, ", "));
    // The holds that acted on either process meanwhile: what forced (or delayed) this interleaving.
    const int64_t first = std::min(a.from, b.from), last = std::max(a.to, b.to);
    std::vector<std::string> held;
    for (const auto& hs : holds_) {
      if (hs.process != a.process && hs.process != b.process) continue;
      const int64_t end = hs.released < 0 ? std::numeric_limits<int64_t>::max() : hs.released;
      if (hs.fired > last || end < first) continue;
      held.push_back(fmt::format("{} {} at {}, {}", hs.process, hs.pause ? "paused" : "held", hs.fault.str(),
                                 hs.releaseText(true)));
      st.ops.push_back(hs.fired);
      if (hs.released >= 0 && hs.noted) st.ops.push_back(hs.released);
    }
    if (!held.empty()) out += fmt::format(" ({})", fmt::join(held, "; "));
    return out;
  }

private:
  const HistoryView& h_;
  std::vector<WorkStep> steps_;
  std::vector<std::pair<std::string, int64_t>> deaths_;
  std::vector<HoldSpan> holds_;
};

} // namespace

Story interleaving(const HistoryView& h, const std::vector<int>& a, const std::vector<int>& b) {
  Story st;
  Interleaver il(h);
  std::vector<WorkSpan> left = il.spans(a), right = a == b ? left : il.spans(b);
  std::set<std::string> pairs; // each pair of processes told once: its first overlap
  std::vector<std::string> clauses;
  for (const WorkSpan& x : left) {
    for (const WorkSpan& y : right) {
      if (x.process == y.process) continue;
      // The one that had it first is named first.
      const WorkSpan& p = x.delivery <= y.delivery ? x : y;
      const WorkSpan& q = x.delivery <= y.delivery ? y : x;
      std::string key = p.process < q.process ? p.process + " " + q.process : q.process + " " + p.process;
      if (pairs.count(key)) continue;
      std::string clause = il.tell(p, q, st);
      if (clause.empty()) continue;
      pairs.insert(key);
      clauses.push_back(std::move(clause));
    }
  }
  st.text = fmt::format("{}", fmt::join(clauses, ", "));
  return st;
}

} // namespace idem::detail
