/// The answers an HTTP run still owes the client (http_run_end.cc of HttpLoop, http_loop.h), and when it
/// takes them: a request it gave up on (a timeout), held in flight until the next request has its answer;
/// the requests parked at a hold between replicas, once no hold holds them; and at the end, the client's
/// retries of every key that has no final answer, and with replicas, its last look at every key that has one.
#include "supervisor/http_loop.h"

#include <algorithm>

namespace idem {

namespace {

using std::chrono::milliseconds;

/// The client's pause between retries of a key that has no final answer yet.
constexpr milliseconds kRetryEvery{100};
/// How long past the declared lease the client keeps retrying a key (timing noise of the server's clock).
constexpr milliseconds kLeaseMargin{500};
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
  pump([&] { return f->done.load(); });
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
    pump([&] { return f->done.load(); });
    it = parked_.erase(it);
    finish(*f);
  }
}

void HttpLoop::settle() {
  std::vector<int> keys;
  for (const auto& c : s_.client)
    if ((c.kind == ClientOp::Kind::Send || c.kind == ClientOp::Kind::Burst) &&
        std::find(keys.begin(), keys.end(), c.key) == keys.end())
      keys.push_back(c.key);
  int attempt = 0;
  for (int key : keys) {
    if (completed_.count(key)) continue;
    auto until = Clock::now() + milliseconds(spec_.policy.leaseMs) + kLeaseMargin;
    while (true) {
      const size_t before = h_.size();
      // Round robin over the replicas, each live (a process that ended was replaced): a retry goes to any.
      Flight& f = launch(attempt++ % s_.replicas + 1, 0, "settle", key, key, keyValue(key), ClientOp::Wait::Answer);
      pump([&] { return f.done.load(); });
      HttpAnswer a = f.answer;
      finish(f);
      quiet();
      if (completed_.count(key)) break;
      // A stored 5xx (replay_5xx) is the key's answer: one retry got it again, the client stops.
      bool again = !(a.outcome == "answered") || (a.status >= 500 && !spec_.policy.replay5xx) ||
                   (spec_.policy.inFlight != 0 && a.status == spec_.policy.inFlight);
      // A timed-out request of the key a delay still holds is an answer still due: the client retries on
      // until it has come (then the lease counts from a server with nothing of the key in flight).
      const bool due = late_ && !late_->done && late_->key == key;
      // A fault while the retry was in flight (its server killed and replaced, PostgreSQL restarted, ...) is
      // the harness's, not the server's answer: the lease counts again from the server that comes after it.
      // Faults fire once each, so this ends.
      const auto since = h_.opsFrom(before);
      if (again && std::any_of(since.begin(), since.end(), [](const Op& op) { return op.as<ops::FaultOp>(); }))
        until = std::max(until, Clock::now() + milliseconds(spec_.policy.leaseMs) + kLeaseMargin);
      if (!again || (Clock::now() >= until && !due)) break;
      pump([t = Clock::now() + kRetryEvery] { return Clock::now() >= t; }); // the client's back-off
    }
  }
}

void HttpLoop::lookAgain() {
  if (s_.replicas < 2) return;
  for (int key : std::set<int>(completed_))
    for (int replica = 1; replica <= s_.replicas; ++replica) {
      // The server's retention may count from the key's first request: from when it might have forgotten it
      // (less a margin for the two clocks), a fresh execution is as right as a replay.
      const auto sent = firstSent_.count(key) ? firstSent_.at(key) : started_;
      const bool afterRetention = Clock::now() - sent + kRetentionMargin >= milliseconds(spec_.policy.retentionMs);
      Flight& f = launch(replica, 0, "settle", key, key, keyValue(key), ClientOp::Wait::Answer, 0, {}, afterRetention);
      pump([&] { return f.done.load(); });
      finish(f);
      quiet();
    }
}

} // namespace idem
