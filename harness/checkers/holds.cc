#include "checkers/holds.h"

#include <fmt/format.h>

namespace idem {

std::string HoldSpan::releaseText(bool brief) const {
  if (released < 0) return "never released";
  if (!noted) return why.empty() ? "released" : "released after " + why.substr(0, why.find(" passed"));
  std::string w = why;
  if (brief) {
    if (size_t paren = w.find(" ("); paren != std::string::npos && paren > 0) w.erase(paren);
  }
  return fmt::format("released{}: {}", atOnce ? " at once" : "", w);
}

std::vector<HoldSpan> holdsOf(const std::vector<Op>& history) {
  std::vector<HoldSpan> out;
  for (size_t i = 0; i < history.size(); ++i) {
    const auto* f = history[i].as<ops::FaultOp>();
    if (!f || (f->fault.kind != "hold" && f->fault.kind != "pause")) continue;
    HoldSpan h;
    h.process = history[i].process;
    h.fault = f->fault;
    h.pause = f->fault.kind == "pause";
    h.fired = history[i].index;
    const std::string prefix = f->fault.kind + " " + f->fault.str() + " released";
    for (size_t j = i + 1; j < history.size() && h.released < 0; ++j) {
      const Op& op = history[j];
      if (op.process != h.process) continue;
      if (const auto* n = op.as<ops::Note>(); n && n->message.rfind(prefix, 0) == 0) {
        std::string rest = n->message.substr(prefix.size()); // ": why" or " at once: why"
        h.atOnce = rest.rfind(" at once", 0) == 0;
        size_t colon = rest.find(": ");
        h.why = colon == std::string::npos ? "" : rest.substr(colon + 2);
        h.noted = true;
        h.released = op.index;
        h.heldUs = op.time_us - history[i].time_us;
      } else if (const auto* s = op.as<ops::Step>(); s && s->verb == f->fault.verb) {
        // Its own step, ended without a note: the hold's time passed (or, without one, it was let go).
        if (f->fault.args.size() == 1) h.why = f->fault.args[0] + " ms passed";
        h.released = op.index;
        h.heldUs = op.time_us - history[i].time_us;
      } else if (op.as<ops::Exit>()) {
        break; // it died held
      }
    }
    out.push_back(std::move(h));
  }
  return out;
}

} // namespace idem
