/// The answers an HTTP run still owes the client (http_run_end.cc of HttpLoop, http_loop.h), and when it
/// takes them: a request it gave up on (a timeout), held in flight until the next request has its answer;
/// the requests parked at a hold between replicas, once no hold holds them; and at the end, the client's
/// retries of every key that has no final answer, and with replicas, its last look at every key that has one;
/// and the client's patience with any request it waits for (overdue(): it gives up on one the server holds for good).
#include "supervisor/http_loop.h"

#include "plan/advisory_lock.h"

#include <algorithm>

namespace idem {

namespace {

using std::chrono::milliseconds;

/// The client's pause between retries of a key that has no final answer yet.
constexpr milliseconds kRetryEvery{100};
/// How long past the declared lease the client keeps retrying a key (timing noise of the server's clock).
constexpr milliseconds kLeaseMargin{500};
/// How long past the declared lease the client waits for an answer (with nothing of the harness's meanwhile:
/// overdue()) before it gives up on it: the server holds the request for good (a lock nobody will release).
constexpr milliseconds kGiveUpAfter{5000};
/// How long before the declared retention has passed the client's last look counts a key as possibly
/// forgotten (the server's clock and when it starts counting are its own).
constexpr milliseconds kRetentionMargin{200};

} // namespace

void HttpLoop::endLate(const std::string& why, bool mustEnd) {
  if (!late_) return;
  ctl_.openGate(why);
  if (!mustEnd && !late_->done && ctl_.delayed() > 0) return;
  Flight* f = late_;
  late_ = nullptr;
  answerOrGiveUp(*f);
  finish(*f);
  quiet();
}

void HttpLoop::settleParked(const std::set<int64_t>& before, bool end) {
  for (const auto& h : ctl_.activeHolds())
    if (parks(h) && (end || (before.count(h.token.id) && h.fault.args.empty())))
      ctl_.releaseHold(h.token.id, end ? "the client's last request has its answer"
                                       : "the next request has its answer: every other process is idle");
  for (auto it = parked_.begin(); it != parked_.end();) {
    Flight* f = *it;
    const auto holds = ctl_.activeHolds();
    const bool held = std::any_of(holds.begin(), holds.end(), [&](const Controller::ActiveHold& h) { return h.process == f->server; });
    if (!f->done && held) {
      ++it;
      continue;
    }
    f->parked = false; // the client waits for it now: a hold that holds it again ends when nothing moves
    answerOrGiveUp(*f);
    it = parked_.erase(it);
    finish(*f);
  }
}

bool HttpLoop::askUntilDefinite(int key, const std::function<int()>& replica, bool afterRetention, bool untilCompleted) {
  const milliseconds lease(spec_.policy.leaseMs);
  auto until = Clock::now() + lease + kLeaseMargin;
  while (true) {
    // The client's requests are over: a hold that fired since (a step the server sent after it answered, an
    // unlock in a finally block) holds no request of the client's, and would hold the server's lock for good
    // while the retries, answered at once, never wait for it.
    settleParked({}, true);
    const size_t before = h_.size();
    Flight& f = launch(replica(), 0, "settle", key, key, keyValue(key), ClientOp::Wait::Answer, 0, {}, afterRetention);
    answerOrGiveUp(f);
    HttpAnswer a = f.answer;
    const bool gaveUp = f.abandoned && a.outcome != "answered";
    finish(f);
    quiet();
    if (gaveUp) return false; // the lease and more passed with no answer: the client retries no more
    if (untilCompleted && completed_.count(key)) return true; // this answer, or a late one of the key's
    // A stored 5xx (replay_5xx) is the key's answer: one retry got it again, the client stops.
    bool again = !(a.outcome == "answered") || (a.status >= 500 && !spec_.policy.replay5xx) ||
                 (spec_.policy.inFlight != 0 && a.status == spec_.policy.inFlight);
    if (!again) return true;
    // A timed-out request of the key a delay still holds is an answer still due: the client retries on
    // until it has come (then the lease counts from a server with nothing of the key in flight).
    const bool due = late_ && !late_->done && late_->key == key;
    // A fault while the retry was in flight (its server killed and replaced, PostgreSQL restarted, ...) is
    // the harness's, not the server's answer: the lease counts again from the server that comes after it.
    // Faults fire once each, so this ends.
    const auto since = h_.opsFrom(before);
    const bool faulted = std::any_of(since.begin(), since.end(), [](const Op& op) { return op.as<ops::FaultOp>(); });
    if (!untilCompleted && !faulted) return false; // a look: the server's own answer is what is judged
    if (faulted) until = std::max(until, Clock::now() + lease + kLeaseMargin);
    if (Clock::now() >= until && !due) return false;
    pump([t = Clock::now() + kRetryEvery] { return Clock::now() >= t; }); // the client's back-off
  }
}

bool HttpLoop::overdue(Flight& f) {
  if (f.done || f.abandoned) return false;
  const auto patience = milliseconds(spec_.policy.leaseMs) + kGiveUpAfter;
  const auto now = Clock::now();
  if (!f.due) f.due = f.launched + patience;
  // Anything moving (a step, a reply: the server works, if slowly) starts the wait again. So does the
  // harness's time, which is not the server's: a fault (a kill and its replacement, a restart, ...), an
  // answer to another request (what `f` waits for may have been the other's), the harness holding a step
  // itself (a hold, a pause, the gate, a delay; a parked or timed-out request it has not let go of).
  const auto since = h_.opsFrom(f.seen);
  f.seen += since.size();
  const uint64_t activity = ctl_.activity();
  const bool moved = activity != f.moved;
  f.moved = activity;
  // A server process that waits on nothing of a server's may be slow, not stuck (a request that sleeps, a
  // call to a service the harness does not see): only one held at a server (PostgreSQL making it wait on a
  // lock) is given up on.
  const bool again = moved || !servers_.waitsOnAServer(f.server) ||
      std::any_of(since.begin(), since.end(), [](const Op& op) { return op.as<ops::FaultOp>() || op.as<ops::Response>(); }) ||
      ctl_.gated() > 0 || ctl_.delaying() || ctl_.delayed() > 0 || !ctl_.activeHolds().empty() ||
      (late_ && late_ != &f && !late_->done) ||
      std::any_of(parked_.begin(), parked_.end(), [&](const Flight* p) { return p != &f && !p->done; });
  if (again) {
    f.due = now + patience;
    return false;
  }
  return now >= *f.due;
}

void HttpLoop::abandon(Flight& f) {
  if (f.done || f.abandoned) return;
  f.abandoned = true;
  f.call->cancel();
  const auto waited = std::chrono::duration_cast<milliseconds>(Clock::now() - f.launched).count();
  h_.append("client", ops::Note{fmt::format("r{} has had no answer from {} for {} ms, past the declared lease of {} ms "
                                            "and {} ms more with nothing moving (no step, fault, hold or other answer): "
                                            "the client gives up on it",
                                            f.id, f.server, waited, spec_.policy.leaseMs, kGiveUpAfter.count())});
}

void HttpLoop::answerOrGiveUp(Flight& f) {
  pump([&] { return f.done.load() || overdue(f); });
  if (f.done) return;
  abandon(f);
  pump([&] { return f.done.load(); });
}

void HttpLoop::settle() {
  std::vector<int> keys;
  for (const auto& c : s_.client)
    if ((c.kind == ClientOp::Kind::Send || c.kind == ClientOp::Kind::Burst) &&
        std::find(keys.begin(), keys.end(), c.key) == keys.end())
      keys.push_back(c.key);
  int attempt = 0;
  // Round robin over the replicas, each live (a process that ended was replaced): a retry goes to any.
  for (int key : keys)
    if (!completed_.count(key)) askUntilDefinite(key, [&] { return attempt++ % s_.replicas + 1; }, false, true);
}

bool HttpLoop::mayBeForgotten(int key) const {
  // The server's retention may count from the key's first request: from when it might have forgotten it
  // (less a margin for the two clocks), a fresh execution is as right as a replay.
  const auto sent = firstSent_.count(key) ? firstSent_.at(key) : started_;
  return Clock::now() - sent + kRetentionMargin >= milliseconds(spec_.policy.retentionMs);
}

void HttpLoop::lookAgain() {
  if (s_.replicas < 2) {
    lookBesideABusyConnection();
    return;
  }
  for (int key : std::set<int>(completed_))
    for (int replica = 1; replica <= s_.replicas; ++replica)
      // Asked again only when a fault cut the look short (a kill at a later step, an error answered instead
      // of one): that answer is the harness's. The server's own answer, whatever it is, is judged.
      askUntilDefinite(key, [replica] { return replica; }, mayBeForgotten(key), false);
}

void HttpLoop::lookBesideABusyConnection() {
  if (completed_.size() < 2) return;
  const auto ops = h_.ops();
  const bool sessionLocks = std::any_of(ops.begin(), ops.end(), [](const Op& op) {
    const auto* st = op.as<ops::Step>();
    return st && st->server == "pg" && !st->setUp && advisoryLockCall(st->detail).session;
  });
  if (!sessionLocks) return;
  const std::vector<int> keys(completed_.begin(), completed_.end());
  for (size_t i = 0; i < keys.size(); ++i) {
    const int key = keys[i], other = keys[(i + 1) % keys.size()];
    settleParked({}, true);
    ctl_.gate("SELECT", 1, fmt::format("key {}'s look holds a connection of the server's pool before its first SELECT, "
                                       "so that key {}'s look takes another", other, key));
    Flight& busy = launch(1, 0, "settle", other, other, keyValue(other), ClientOp::Wait::Answer, 0, {}, mayBeForgotten(other));
    pump([&] { return busy.done.load() || ctl_.gated() > 0 || overdue(busy); });
    // The look goes while the other one is held (a server with one connection makes it wait: the gate opens
    // once nothing moved for kGateQuiet). Asked again only when a fault cut it short, as lookAgain's.
    if (!busy.done && ctl_.gated() > 0) askUntilDefinite(key, [] { return 1; }, mayBeForgotten(key), false);
    ctl_.openGate("the look beside it has its answer");
    answerOrGiveUp(busy);
    finish(busy);
    quiet();
  }
}

} // namespace idem
