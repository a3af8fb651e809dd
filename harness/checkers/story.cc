#include "checkers/diagnosis.h"

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
    if (kill && ack && ack->op < kill->op) kill = nullptr;
    if (ack && lost_) {
      out += fmt::format(" and acknowledged by {} without effect", d.process);
      st_.ops.push_back(ack->op);
    }
    if (kill && !killsTold_.count(kill->op)) {
      killsTold_.insert(kill->op);
      out += fmt::format(", {} killed at {}", d.process, kill->point);
      st_.ops.push_back(kill->op);
      if (st_.kill_point.empty()) st_.kill_point = kill->point;
    }
    return out;
  }

private:
  const HistoryView& h_;
  bool lost_;
  Story& st_;
  std::set<int64_t> killsTold_;
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
  Teller teller(h, lost, st);
  std::set<std::string> procs;
  for (const DeliveryRec* d : ds) procs.insert(d->process);

  if (ds.empty()) {
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
    clause += teller.after(*ds.back(), kEnd);
    parts.push_back(clause);
  } else {
    std::set<std::string> seen;
    std::string clause;
    for (size_t i = 0; i < ds.size(); ++i) {
      const DeliveryRec& d = *ds[i];
      std::string verb = i == 0 ? "delivered to" : seen.count(d.entry) ? "redelivered to"
                                                                        : fmt::format("delivered again (entry {}) to", d.entry);
      seen.insert(d.entry);
      clause += fmt::format("{}{} {} ({})", i ? ", " : "", verb, d.process, d.label);
      clause += teller.after(d, nextDelivery(ds, i));
    }
    parts.push_back(clause);
  }
  if (!ds.empty() && !h.acked(n)) parts.push_back("never acknowledged");
  st.text = fmt::format("{}", fmt::join(parts, ", "));
  return st;
}

} // namespace idem::detail
