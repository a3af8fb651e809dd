#include "checkers/detail.h"
#include "checkers/diagnosis.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace idem::detail {

namespace {

std::string eventOf(const HistoryView& h, const std::string& entry, Violation& v) {
  auto it = h.entryEvent.find(entry);
  if (it == h.entryEvent.end()) return "not an entry the producer sent";
  v.events.push_back(it->second);
  for (const SendRec* s : h.sendsOf(it->second)) {
    if (s->entry == entry) v.ops.push_back(s->op);
  }
  return fmt::format("event {}", it->second);
}

} // namespace

CheckResult checkBroker(const HistoryView& h) {
  const ops::Final& fin = h.requireFinal();
  // Entries left are stuck only when that is proven (every live consumer idle, or re-reading them without
  // acknowledging, also after a restart); at a limit of the harness the consumer may still have been busy.
  if (h.end() == RunEnd::Limit) {
    size_t left = fin.pending.size() + fin.undelivered.size();
    std::vector<std::string> why;
    if (left > 0)
      why.push_back(fmt::format("{} entr{} left pending or undelivered, but the run did not finish ({})", left,
                                left == 1 ? "y" : "ies", h.endReason()));
    else why.push_back(fmt::format("the run did not finish ({})", h.endReason()));
    return resultOf({}, why);
  }
  // The processes that ran under each consumer name (a same-name restart reuses one).
  std::map<std::string, std::vector<std::string>> processesOf;
  for (const auto& [op, spawn] : recordsOf<ops::Spawn>(h.ops)) processesOf[spawn->consumer].push_back(op->process);
  std::vector<Violation> out;
  for (const auto& p : fin.pending) {
    Violation v;
    v.kind = "stuck";
    v.invariant = "broker";
    v.entries = {p.entry};
    std::string ev = eventOf(h, p.entry, v);
    v.observed = {{"entry", p.entry}, {"consumer", p.consumer}, {"idle_ms", p.idleMs}, {"deliveries", p.deliveries}};
    v.message = fmt::format("entry {} ({}) is pending at {} after {} deliver{}, never acknowledged", p.entry, ev,
                            p.consumer, p.deliveries, p.deliveries == 1 ? "y" : "ies");
    const auto& procs = processesOf[p.consumer];
    const KillRec* last = nullptr;
    for (const auto& k : h.kills) {
      if (std::find(procs.begin(), procs.end(), k.process) != procs.end()) last = &k;
    }
    if (last) {
      bool restarted = procs.size() > 1 && procs.back() != last->process;
      v.kill_point = last->point;
      v.ops.push_back(last->op);
      v.message += fmt::format("; {} was killed at {}{}", last->process, last->point,
                               restarted ? " and its restart under the same name did not acknowledge it"
                                         : " and no process claimed it");
    }
    for (const auto& d : h.deliveries) {
      if (d.entry == p.entry) v.ops.push_back(d.op);
    }
    out.push_back(std::move(v));
  }
  for (const auto& entry : fin.undelivered) {
    Violation v;
    v.kind = "stuck";
    v.invariant = "broker";
    v.entries = {entry};
    std::string ev = eventOf(h, entry, v);
    // Delivered before, and maybe acknowledged: the broker's position went back (a forget, a rebalance) and
    // no consumer read it again; a consumer that keeps its own position (offsets in its database) skips it.
    const DeliveryRec* delivered = nullptr;
    for (const auto& d : h.deliveries)
      if (d.entry == entry && !delivered) delivered = &d, v.ops.push_back(d.op);
    const AckRec* acked = nullptr;
    for (const auto& a : h.acks)
      if (a.entry == entry && !acked) acked = &a, v.ops.push_back(a.op);
    if (!delivered) {
      v.message = fmt::format("entry {} ({}) was never delivered", entry, ev);
    } else if (!acked) {
      v.message = fmt::format("entry {} ({}) was delivered ({} to {}) but is unread for the broker at the end: "
                              "nothing acknowledged it", entry, ev, delivered->label, delivered->process);
    } else {
      const auto* ack = h.ops[static_cast<size_t>(acked->op)].as<ops::Step>();
      v.message = fmt::format("entry {} ({}) was delivered ({} to {}) and acknowledged ({} by {}), yet is unread for "
                              "the broker at the end: its position went back (a forget, a rebalance) and no consumer "
                              "read and acknowledged it again",
                              entry, ev, delivered->label, delivered->process, ack ? ack->name() : "?", acked->process);
    }
    out.push_back(std::move(v));
  }
  return resultOf(std::move(out), {});
}

} // namespace idem::detail
