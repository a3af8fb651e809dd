/// The holds of an HTTP run (http_holds.cc of HttpLoop, http_loop.h): the faults carried out while a step
/// waits (a server restart, the end of a timed hold or pause), and the holds between replicas
/// (hold:s1:before:COMMIT#1[:s2:after:COMMIT#1]) that let the client go on while a request waits at one.
#include "supervisor/http_loop.h"

#include "plan/fault_kind.h"

#include <fmt/format.h>

namespace idem {

// ---- faults carried out here ----

void HttpLoop::tend() {
  for (const auto& a : ctl_.takeServerActions()) {
    if (faultKind(a.fault.kind, "fault").effect(a.fault).action == Effect::Action::Restart) restartServer(a.fault);
    ctl_.serverActionDone(a);
  }
  for (const auto& h : ctl_.activeHolds()) {
    if (h.fault.args.size() != 1 && !(h.pause && h.fault.args.empty())) continue; // released by a point or idleness
    const int64_t ms = h.fault.args.size() == 1 ? std::stoll(h.fault.args[0]) : kHttpPauseMs;
    if (Clock::now() - h.since >= milliseconds(ms)) ctl_.releaseHold(h.token.id, fmt::format("{} ms passed", ms));
  }
}

void HttpLoop::restartServer(const Fault& f) {
  servers_.restarting(f, f.args.at(0) == "pg" ? "PostgreSQL" : ws_.broker->title());
  ws_.restartServer(f.args.at(0), hub_);
}

// ---- holds between replicas ----

bool HttpLoop::heldAt(const Flight& f) const {
  for (const auto& h : ctl_.activeHolds())
    if (parks(h) && h.process == f.server && h.since >= f.launched) return true;
  return false;
}

bool HttpLoop::answerOrPark(Flight& f) {
  bool giveUp = false;
  pump([&] { return f.done.load() || heldAt(f) || (giveUp = overdue(f)); });
  if (f.done) return true;
  if (giveUp) { // the server holds it for good: the client closes it and goes on
    abandon(f);
    pump([&] { return f.done.load(); });
    return true;
  }
  f.parked = true;
  parked_.push_back(&f);
  h_.append("client", ops::Note{fmt::format("r{} waits at a hold on {}: the client goes on", f.id, f.server)});
  return false;
}

std::set<int64_t> HttpLoop::holdsNow() const {
  std::set<int64_t> out;
  for (const auto& h : ctl_.activeHolds()) out.insert(h.token.id);
  return out;
}

} // namespace idem
