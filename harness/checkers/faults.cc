#include "checkers/detail.h"
#include "checkers/holds.h"
#include "history/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace idem::detail {

namespace {

/// A timed pause ends at its time whether or not the other consumers moved (docs/faults.md): one that ended
/// before any other consumer made a request tested the pause alone, not a race with them, and its pass says
/// nothing about one. Said only when the run had another consumer process.
std::vector<std::string> pauseNotes(const HistoryView& h) {
  std::vector<std::string> notes;
  for (const HoldSpan& p : holdsOf(h.ops)) {
    if (!p.pause || p.released < 0 || !p.why.ends_with(" ms passed")) continue;
    bool others = false;
    for (const Op& op : h.ops)
      if (op.index < p.released && op.as<ops::Spawn>() && op.process != p.process) others = true;
    if (!others) continue;
    const bool moved = std::any_of(h.steps.begin(), h.steps.end(), [&](const StepRec& s) {
      return s.process != p.process && s.op > p.fired && s.op < p.released;
    });
    if (moved) continue;
    notes.push_back(fmt::format(
        "{} stopped {} and ended when {}, before any other consumer made a request: the run raced nothing with "
        "the pause (a longer one, pause:{}:MS, or one that waits for another's point, pause:{}:cN:after:VERB#k, "
        "makes the race)",
        p.fault.str(), p.process, p.why, p.fault.point(), p.fault.point()));
  }
  return notes;
}

} // namespace

CheckResult checkFaults(const HistoryView& h) {
  const Schedule& schedule = h.requirePlan().schedule;
  std::vector<std::string> unknown;
  for (const Fault& want : schedule.faults) {
    bool fired = std::any_of(h.ops.begin(), h.ops.end(), [&](const Op& op) {
      const auto* f = op.as<ops::FaultOp>();
      return f && f->fault == want;
    });
    if (fired) continue;
    // Reached, but not applied there (an error of another server than the step's): say why, not "never fired".
    const std::string notApplied = fmt::format("fault {} not applied: ", want.str());
    std::string why;
    for (const Op& op : h.ops)
      if (const auto* n = op.as<ops::Note>(); n && why.empty() && n->message.rfind(notApplied, 0) == 0)
        why = n->message.substr(notApplied.size());
    if (!why.empty()) {
      unknown.push_back(fmt::format("fault {} was not applied at its step: {}", want.str(), why));
      continue;
    }
    int requests = 0, shutdown = 0; // its verb's requests, and those of them sent while a process was stopped
    for (const StepRec& s : h.steps) {
      if (s.verb != want.verb || (!want.process.empty() && s.process != want.process)) continue;
      ++requests;
      if (const auto* st = h.ops[static_cast<size_t>(s.op)].as<ops::Step>(); st && st->stopping) ++shutdown;
    }
    std::string what = want.isKill() ? "kill point" : "fault";
    unknown.push_back(fmt::format("{} {} never fired: {} made {} {} request{}{}", what, want.str(),
                                  want.process.empty() ? "the target" : want.process, requests, want.verb,
                                  requests == 1 ? "" : "s",
                                  shutdown == 0 ? ""
                                  : fmt::format(", {} while idemproof stopped its process (a shutdown step is no "
                                                "fault point)", requests == 1 ? std::string("sent")
                                                                : shutdown == requests ? std::string("all sent")
                                                                                       : fmt::format("{} of them sent", shutdown))));
  }
  CheckResult r = resultOf({}, unknown);
  r.notes = pauseNotes(h);
  return r;
}

CheckResult checkObservation(const HistoryView& h) {
  bool faults = h.plan && !h.plan->schedule.faults.empty();
  std::vector<std::string> unknown;
  for (const auto& [op, o] : h.opaque) {
    std::string what = fmt::format("{}'s {} connection {} could not be decoded ({} bytes from byte {}: {})", op->process,
                                   serverTitle(o->server), o->conn, o->direction, o->offset,
                                   o->reason);
    // The broker's connection (anything but PostgreSQL and the sink): what it delivered and what was
    // acknowledged went unseen, and with them when a consumer was idle or busy.
    if (o->server != "pg" && o->server != "sink")
      unknown.push_back(what + ": the deliveries and acknowledgements on it were not seen, so a pass can't be proven");
    else if (faults)
      unknown.push_back(what + ": its steps were not counted, so a planned kill point could have been on it");
  }
  return resultOf({}, unknown);
}

} // namespace idem::detail
