// HTTP: a session-level lock left held after an error. A server takes a key's lock with a session-level
// advisory lock (pg_advisory_lock, pg_try_advisory_lock: held until unlocked or the session ends, whatever
// becomes of the transaction), a statement after it fails, and its error path leaves the lock held while
// the connection lives on (back in its pool: the connection is used again). Every other session is then
// refused the key, or waits for it, for good: a retry that reaches another connection (another replica,
// another pooled connection) gets the in-flight status for a key that has long completed (replay-mismatch)
// or never completes (stuck-key), or waits for it until the client gives up (a blocking pg_advisory_lock:
// replay-mismatch, no answer). The same refusal when the unlock went out on another connection of the process
// (a pool's query() while the locking client is still checked out): http-unlock-on-other-connection. Named only when the steps show the lock's connection, its error while
// it held a lock, its use after that with no unlock before its next lock call (the erring request's error
// path released nothing), and more lock calls than unlocks at the violation.
#include "checkers/patterns/patterns.h"
#include "plan/advisory_lock.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

namespace idem::detail::patterns {

namespace {

/// pg_advisory_unlock_all, or DISCARD ALL (a pool's reset): every session lock released.
bool releasesAll(const ops::Step& s) {
  return advisoryLockCall(s.detail).unlocksAll || (s.verb == "DISCARD" && says(s, "ALL"));
}

/// One connection of a server process, as its steps tell it.
struct Session {
  int held = 0;                ///< session locks taken and not yet released
  std::optional<StepAt> lock;  ///< the lock call that took the first of them
  std::optional<StepAt> error; ///< the first error while one was held
  bool usedAfter = false;      ///< a step on it after that error: the session lived on
  bool lockedAfter = false;    ///< a lock call on it after that error: the erring request's work was over
};

} // namespace

Found httpSessionLockLeft(const HistoryView& h, const Violation& v) {
  if (v.kind != "replay-mismatch" && v.kind != "stuck-key") return std::nullopt;
  // The violation is a refusal: an answer of the key that is not a success (the in-flight status), or none
  // before the client gave up (a wait on the lock).
  int64_t end = -1;
  const ops::Response* refusal = nullptr;
  for (int64_t i : v.ops) {
    if (i < 0 || static_cast<size_t>(i) >= h.ops.size()) continue;
    end = std::max(end, i);
    if (const auto* a = h.ops[static_cast<size_t>(i)].as<ops::Response>();
        a && ((a->final() && a->status >= 400) || a->outcome == "timeout"))
      refusal = a;
  }
  if (!refusal) return std::nullopt;
  std::map<std::pair<std::string, int>, Session> sessions;
  std::map<std::string, StepAt> strays; ///< process -> its first unlock on a connection that held no lock
  auto endAll = [&](const std::string& process) {
    for (auto& [id, s] : sessions)
      if (id.first == process) s = Session{};
  };
  for (int64_t i = 0; i <= end && static_cast<size_t>(i) < h.ops.size(); ++i) {
    const Op& op = h.ops[static_cast<size_t>(i)];
    if (op.as<ops::Exit>()) endAll(op.process); // its sessions ended with it
    if (const auto* f = op.as<ops::FaultOp>(); f && f->fault.kind == "restart") sessions.clear();
    const auto* st = op.as<ops::Step>();
    if (!st || st->server != "pg" || st->setUp) continue;
    Session& s = sessions[{op.process, st->conn}];
    using O = ops::StepOutcome;
    if (st->outcome != O::Ok && st->outcome != O::Answered) { // killed or dropped: the session ended
      s = Session{};
      continue;
    }
    if (s.error) s.usedAfter = true;
    if (st->error) {
      if (s.held > 0 && !s.error) s.error = StepAt{i, st};
      continue;
    }
    const AdvisoryLockCall call = advisoryLockCall(st->detail);
    if (releasesAll(*st)) {
      s = Session{};
    } else if (call.unlocks) {
      // An unlock on a connection that holds no lock, while another of the process's holds one: PostgreSQL
      // releases nothing there (pg_advisory_unlock answers false, with a warning). The lock is the other's.
      // Which key an unlock names the steps do not say: one such unlock shows the process sends them astray.
      if (s.held == 0 && !strays.count(op.process) &&
          std::any_of(sessions.begin(), sessions.end(), [&](const auto& o) { return o.first.first == op.process && o.second.held > 0; }))
        strays.emplace(op.process, StepAt{i, st});
      if (s.held > 0 && --s.held == 0) s = Session{};
      // The erring request's own error path released it: a count off by a try-lock that took nothing
      // (pg_try_advisory_lock answers false, and nothing shows it) is no lock left held.
      if (s.error && !s.lockedAfter) {
        s.error.reset();
        s.usedAfter = false;
      }
    } else if (call.session) {
      if (s.held++ == 0) s.lock = StepAt{i, st};
      if (s.error) s.lockedAfter = true;
    }
  }
  const std::string got = refusal->outcome == "timeout" ? std::string("no answer") : std::to_string(refusal->status);
  for (const auto& [id, s] : sessions) {
    auto stray = strays.find(id.first);
    if (s.held == 0 || !s.lock || s.error || stray == strays.end()) continue;
    return make("http-unlock-on-other-connection", "an unlock sent on another connection",
                {s.lock->op, stray->second.op, end},
                fmt::format("{}'s connection {} took a session-level lock ({}: {}) and still held it, and {} sends its "
                            "unlocks astray: {} went out on its connection {}, which held no lock, so PostgreSQL "
                            "released nothing; the locks outlive their requests, and every other session is refused "
                            "the key, or waits for it (r{} got {})",
                            id.first, id.second, s.lock->name(), s.lock->step->detail, id.first, stray->second.name(),
                            stray->second.step->conn, refusal->id, got),
                "send the unlock on the connection that took the lock (a pool's query() may take another: check "
                "the client out, lock, work and unlock on it, then release it), or take the lock with "
                "pg_advisory_xact_lock inside the request's transaction");
  }
  for (const auto& [id, s] : sessions) {
    if (s.held == 0 || !s.lock || !s.error || !s.usedAfter) continue;
    return make("http-session-lock-left", "a session lock left held after an error",
                {s.lock->op, s.error->op, end},
                fmt::format("{}'s connection {} took a session-level lock ({}: {}), then got an error ({}) while it "
                            "held it and went on without releasing it: the lock outlived its request, and every "
                            "other session is refused the key, or waits for it (r{} got {})",
                            id.first, id.second, s.lock->name(), s.lock->step->detail, s.error->name(), refusal->id, got),
                "take the key's lock with pg_advisory_xact_lock (or pg_try_advisory_xact_lock) inside the request's "
                "transaction, which COMMIT and ROLLBACK release; or release the session lock on every path, the "
                "error path included (a finally block), before the connection goes back to its pool");
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
