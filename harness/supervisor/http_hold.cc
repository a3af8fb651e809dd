#include "supervisor/http_hold.h"

#include <fmt/format.h>

#include <algorithm>

namespace idem {

bool hasTimeout(const Schedule& s) {
  return std::any_of(s.client.begin(), s.client.end(),
                     [](const ClientOp& c) { return c.kind == ClientOp::Kind::Send && c.wait == ClientOp::Wait::Timeout; });
}

Schedule rehearsalOf(const Schedule& s) {
  Schedule r = s;
  r.faults.clear();
  r.client.clear();
  size_t last = 0;
  for (size_t i = 0; i < s.client.size(); ++i)
    if (s.client[i].kind == ClientOp::Kind::Send && s.client[i].wait == ClientOp::Wait::Timeout) last = i + 1;
  for (size_t i = 0; i < last; ++i) {
    ClientOp c = s.client[i];
    if (c.kind == ClientOp::Kind::Send && c.wait == ClientOp::Wait::Timeout) c.wait = ClientOp::Wait::Answer;
    r.client.push_back(c);
  }
  return r;
}

namespace {

/// A PostgreSQL statement that, after the request's COMMIT, takes no effect: a read, a lock's release, a
/// session reset.
bool appliesNothingAfterCommit(const ops::Step& s) {
  static const char* const kVerbs[] = {"SELECT", "ROLLBACK", "RESET", "DISCARD", "UNLISTEN", "CLOSE", "DEALLOCATE",
                                       "SET", "SHOW"};
  return s.server == "pg" && std::any_of(std::begin(kVerbs), std::end(kVerbs), [&](const char* v) { return s.verb == v; });
}

} // namespace

std::map<int, HoldPoint> learnHoldPoints(const std::vector<Op>& history) {
  std::map<int, HoldPoint> out;
  for (size_t i = 0; i < history.size(); ++i) {
    const auto* req = history[i].as<ops::Request>();
    if (!req || req->op == 0 || req->burst != 0) continue;
    // Its steps: those recorded after it and before its answer (a step is recorded when its reply passes,
    // which is before the server can answer on it), whose request left after it was written.
    std::vector<const ops::Step*> steps;
    bool answered = false;
    for (size_t j = i + 1; j < history.size(); ++j) {
      if (const auto* res = history[j].as<ops::Response>(); res && res->id == req->id) {
        answered = true;
        break;
      }
      if (const auto* st = history[j].as<ops::Step>(); st && !st->setUp && st->tReqUs >= history[i].time_us) steps.push_back(st);
    }
    if (!answered || steps.empty()) continue;
    std::stable_sort(steps.begin(), steps.end(), [](const ops::Step* a, const ops::Step* b) { return a->tReqUs < b->tReqUs; });
    // A pool's clean-up on release after the request's COMMIT (asyncpg's `SELECT pg_advisory_unlock_all();
    // CLOSE ALL; UNLISTEN *; RESET ALL`, SQLAlchemy's ROLLBACK on return) applies nothing: held there, the
    // request would be in flight with its effect already committed. The COMMIT is its last step.
    while (steps.size() > 1 && appliesNothingAfterCommit(*steps.back()) &&
           std::any_of(steps.begin(), steps.end() - 1, [](const ops::Step* st) {
             return st->server == "pg" && (st->verb == "COMMIT" || st->verb == "END");
           }))
      steps.pop_back();
    const ops::Step* lastStep = steps.back();
    HoldPoint p{lastStep->verb, 0, lastStep->server};
    for (const auto* st : steps)
      if (st->verb == p.verb) ++p.nth;
    out[req->op] = p;
  }
  return out;
}

std::string describe(const HoldPoint& p) {
  const char* suffix = p.nth % 10 == 1 && p.nth % 100 != 11   ? "st"
                       : p.nth % 10 == 2 && p.nth % 100 != 12 ? "nd"
                       : p.nth % 10 == 3 && p.nth % 100 != 13 ? "rd"
                                                               : "th";
  return fmt::format("{} ({}), the {}{} {} after the request", p.verb, p.server, p.nth, suffix, p.verb);
}

} // namespace idem
