#include "checkers/checkers.h"
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
  const auto& fin = h.requireFinal().value;
  if (!fin.contains("pending") || !fin["pending"].is_array())
    throw std::runtime_error("the final op has no 'pending' array");
  if (!fin.contains("undelivered") || !fin["undelivered"].is_array())
    throw std::runtime_error("the final op has no 'undelivered' array");
  // Entries left are stuck only when that is proven (every live consumer idle, or re-reading them without
  // acknowledging, also after a restart); at a limit of the harness the consumer may still have been busy.
  if (h.end() == RunEnd::Limit) {
    size_t left = fin["pending"].size() + fin["undelivered"].size();
    std::vector<std::string> why;
    if (left > 0)
      why.push_back(fmt::format("{} entr{} left pending or undelivered, but the run did not finish ({})", left,
                                left == 1 ? "y" : "ies", h.endReason()));
    else why.push_back(fmt::format("the run did not finish ({})", h.endReason()));
    return resultOf({}, why);
  }
  const std::string note;
  std::vector<Violation> out;
  for (const auto& p : fin["pending"]) {
    Violation v;
    v.kind = "stuck";
    v.invariant = "broker";
    std::string entry = p.at("entry").get<std::string>();
    std::string consumer = p.value("consumer", "?");
    int deliveries = p.value("deliveries", 0);
    v.entries = {entry};
    std::string ev = eventOf(h, entry, v);
    v.observed = p;
    v.message = fmt::format("entry {} ({}) is pending at {} after {} deliver{}, never acknowledged", entry, ev, consumer,
                            deliveries, deliveries == 1 ? "y" : "ies");
    const KillRec* last = nullptr;
    for (const auto& k : h.kills) {
      if (k.process == consumer) last = &k;
    }
    if (last) {
      bool restarted = std::any_of(h.ops.begin(), h.ops.end(), [&](const Op& op) {
        return op.index > last->op && op.type == "spawn" && op.process == consumer;
      });
      v.kill_point = last->point;
      v.ops.push_back(last->op);
      v.message += fmt::format("; {} was killed at {}{}", consumer, last->point,
                               restarted ? " and its restart under the same name did not acknowledge it"
                                         : " and no process claimed it");
    }
    for (const auto& d : h.deliveries) {
      if (d.entry == entry) v.ops.push_back(d.op);
    }
    v.message += note;
    out.push_back(std::move(v));
  }
  for (const auto& u : fin["undelivered"]) {
    Violation v;
    v.kind = "stuck";
    v.invariant = "broker";
    std::string entry = u.get<std::string>();
    v.entries = {entry};
    std::string ev = eventOf(h, entry, v);
    v.message = fmt::format("entry {} ({}) was never delivered{}", entry, ev, note);
    out.push_back(std::move(v));
  }
  return resultOf(std::move(out), {});
}

} // namespace idem::detail
