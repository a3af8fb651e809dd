/// The HTTP checkers of the client's answers (docs/http-contract.md): replay (a retry gets the first answer,
/// its body compared as the policy's replay_equivalence says), status (the declared created status is the
/// only success of a fresh key) and liveness (every key ends with a definite answer, and a run whose client
/// did not get its answers is unknown, never a pass).
#include "checkers/detail.h"
#include "checkers/http_view.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

namespace idem::detail::http {

namespace {

/// Whether a request with the key and another payload was written before `q` had its answer: then the
/// server may have bound the key to that payload first, and the mismatch status is a right answer to `q`.
bool contested(const HttpView& h, const Req& q) {
  return std::any_of(h.reqs.begin(), h.reqs.end(), [&](const Req& o) {
    return HttpView::keyed(o) && o.r->key == q.r->key && o.r->body != q.r->body && o.op->index < q.answeredAt();
  });
}

std::string bytesText(uint64_t n) { return fmt::format("{} byte{}", n, n == 1 ? "" : "s"); }

/// " (to s2, r1 to s1)" when `q` went to another server process than `ref`, the answer it should replay (with
/// replicas, a replica that cannot replay what another stored); "" otherwise.
std::string whereTo(const Req& q, const Req& ref) {
  if (q.r->server == ref.r->server) return "";
  return fmt::format(" (to {}, r{} to {})", q.r->server, ref.r->id, ref.r->server);
}

} // namespace

CheckResult checkReplays(const HttpView& h) {
  std::vector<Violation> out;
  std::vector<std::string> notes;
  const bool asJson = h.spec.policy.replayEquivalence == "json";
  for (const auto& [key, payload] : h.bound) {
    const Req* ref = h.reference(key);
    if (!ref) continue;
    bool forgotten = false; // from a request after the retention on, the key may be a fresh one
    for (const Req* q : h.own(key)) {
      forgotten = forgotten || h.pastRetention(*q);
      if (forgotten || q == ref || h.otherPayload(*q)) continue;
      // A retry of the completed key that the server held until the client gave up (no other request of the
      // key in flight, no fault, hold or other answer meanwhile: http_run_end.cc): it got nothing.
      if (q->a && q->a->outcome == "timeout" && q->op->index > ref->answerOp->index && !h.overlapped(*q)) {
        const int64_t ms = (q->answerOp->time_us - q->op->time_us) / 1000;
        auto v = violation(h, "replay-mismatch", "replay", key,
                           fmt::format("r{}{} retried the completed key {} and got no answer in {} ms: the server held "
                                       "it while no other request of the key ran and no fault fired, past the declared "
                                       "lease of {} ms, and the client gave up", q->r->id, whereTo(*q, *ref),
                                       key, ms, h.spec.policy.leaseMs),
                           {ref, q});
        v.expected = brief(*ref->a);
        v.observed = fmt::format("no answer in {} ms", ms);
        out.push_back(std::move(v));
        continue;
      }
      if (!q->final()) continue;
      const auto& a = *q->a;
      // A reordered retry rejected as another payload: http:mismatch names it (reordered-rejected).
      if (q->r->reordered && a.status == h.spec.policy.mismatch) continue;
      // Under "wait", one that overlapped another request and got a 4xx: in-flight-rejected (below).
      if (h.spec.policy.inFlight == 0 && a.status >= 400 && a.status < 500 && h.overlapped(*q)) continue;
      const auto& first = *ref->a;
      bool sentAfter = q->op->index > ref->answerOp->index; // a retry of a completed request
      // Equal as JSON: both said they are JSON, were read whole and parse to the same value.
      bool jsonEqual = asJson && !a.jsonDigest.empty() && a.jsonDigest == first.jsonDigest;
      bool sameBody = a.digest == first.digest || jsonEqual;
      bool faithful = a.status == first.status && sameBody && a.location == first.location;
      if (faithful) {
        if (a.digest != first.digest)
          notes.push_back(fmt::format("r{}'s answer to key {} is r{}'s as JSON, in other bytes ({} and {}): the policy "
                                      "compares replays as JSON (replay_equivalence)", q->r->id, key, ref->r->id,
                                      bytesText(a.size), bytesText(first.size)));
        continue;
      }
      bool inflight = h.spec.policy.inFlight != 0 && a.status == h.spec.policy.inFlight;
      if (!sentAfter && (inflight || a.status >= 500)) continue; // it overlapped the first: judged by burst/liveness
      if (inflight && h.overlapped(*q)) continue; // another retry of the key was running: "in flight" is true
      // A hold, a pause or a delay held a server process as q was written: what that process still had to do
      // for the key's earlier request (an unlock once it had answered) waited on the harness.
      if (inflight && h.heldWhileWritten(*q)) continue;
      if (a.status >= 500) continue; // a server error on a retry is the server's to have; liveness judges the end
      if (!(a.status >= 200 && a.status < 300) && !sentAfter) continue;
      std::vector<std::string> diff;
      if (a.status != first.status) diff.push_back(fmt::format("status {} where r{} got {}", a.status, ref->r->id, first.status));
      if (a.location != first.location)
        diff.push_back(fmt::format("Location {} where r{} got {}", a.location.empty() ? "missing" : a.location, ref->r->id,
                                   first.location.empty() ? "none" : first.location));
      if (!sameBody)
        diff.push_back(fmt::format("another body than r{}'s{}", ref->r->id,
                                   asJson && !a.jsonDigest.empty() && !first.jsonDigest.empty() ? " (also as JSON)" : ""));
      auto v = violation(h, "replay-mismatch", "replay", key,
                         fmt::format("r{}{} {} key {} and got {}: {}", q->r->id, whereTo(*q, *ref),
                                     sentAfter ? "retried the completed" : "sent",
                                     key, briefAgainst(a, first), fmt::format("{}", fmt::join(diff, "; "))),
                         {ref, q});
      v.expected = briefAgainst(first, a);
      v.observed = briefAgainst(a, first);
      out.push_back(std::move(v));
    }
  }
  checkStored5xx(h, out);
  checkInFlightWait(h, out);
  CheckResult r = resultOf(std::move(out), {});
  r.notes = std::move(notes);
  return r;
}

CheckResult checkStatuses(const HttpView& h) {
  const auto& pol = h.spec.policy;
  std::vector<Violation> out;
  for (const auto& [key, payload] : h.bound) {
    const Req* ref = h.reference(key);
    bool forgotten = false; // after the retention a key is fresh again: its answer is judged like a first one
    for (const Req* q : h.own(key)) {
      forgotten = forgotten || h.pastRetention(*q);
      if (!q->final() || h.otherPayload(*q)) continue; // a reordered payload under "bytes": http:mismatch
      const int st = q->a->status;
      if (st == pol.created) continue;
      if (st >= 200 && st < 300) {
        if (ref && q != ref && !forgotten) continue; // a 2xx after the first one: http:replay compares the two
      } else {
        if (q->r->burst) continue; // a burst's copy: http:burst judges it
        // Under "wait", a request that overlapped another of its key: http:replay judges it (in-flight-rejected).
        if (pol.inFlight == 0 && h.overlapped(*q)) continue;
        if (ref && q->op->index > ref->answerOp->index && !forgotten) continue; // a retry of a completed request: http:replay
        if (st >= 500) continue;   // a server error: the client retries, and http:liveness judges the end
        if (pol.inFlight != 0 && st == pol.inFlight) continue; // in flight: http:liveness judges the end
        if (st == pol.mismatch && contested(h, *q)) continue;  // another payload may have bound the key first
      }
      const bool success = st >= 200 && st < 300;
      std::string declared =
          success ? fmt::format("the declared success is {}", pol.created)
                  : fmt::format("the declared answers are {} (executed or replayed){} or a 5xx (the client retries)",
                                pol.created, pol.inFlight ? fmt::format(", {} (in flight)", pol.inFlight) : "");
      auto v = violation(h, "unexpected-status", "status", key,
                         fmt::format("r{} sent key {} with its own payload{} and got {}; {}", q->r->id, key,
                                     forgotten ? " after the retention" : "", brief(*q->a), declared),
                         {q});
      v.expected = pol.created;
      v.observed = st;
      out.push_back(std::move(v));
      break; // one per key: the first answer that is none of the declared ones
    }
  }
  return resultOf(std::move(out), {});
}

CheckResult checkLiveness(const HttpView& h) {
  std::vector<Violation> out;
  std::vector<std::string> unknown;
  const bool limited = h.final->end == ops::RunEnd::Limit;
  // A run that did not get through its requests proves nothing about the ones it did not send or read.
  if (limited)
    unknown.push_back(fmt::format("the run ended at a limit before the client had every answer ({})", h.final->reason));
  std::set<int> written;
  for (const auto& q : h.reqs) written.insert(q.r->op);
  std::vector<std::string> unsent;
  for (size_t i = 0; i < h.plan.schedule.client.size(); ++i)
    if (!written.count(static_cast<int>(i) + 1)) unsent.push_back(h.plan.schedule.client[i].str());
  if (!unsent.empty())
    unknown.push_back(fmt::format("the client never wrote {} of the schedule's requests ({})", unsent.size(),
                                  fmt::join(unsent, ", ")));
  // Requests the client does not retry (no key, a malformed one): without an answer their status can't be
  // judged, unless a kill of the server while they were in flight explains it.
  for (const auto& q : h.reqs) {
    if (HttpView::keyed(q) || q.final() || h.killedDuring(q) || (limited && !q.a)) continue;
    unknown.push_back(fmt::format("r{} ({} {}) got no answer ({}): its status can't be judged", q.r->id, q.r->role,
                                  q.r->body, q.a ? q.a->outcome : "none recorded"));
  }
  for (const auto& [key, payload] : h.bound) {
    if (const Req* ref = h.reference(key)) {
      // A request of the key before it completed that the server held until the client gave up (no other
      // request of the key in flight, no fault, hold or other answer meanwhile: http_run_end.cc): the key
      // was stuck for longer than its lease, though it completed later (a pool closing the idle session
      // that held its lock, say; a busy pool never does).
      for (const Req* q : h.own(key)) {
        if (!q->a || q->a->outcome != "timeout" || q->answeredAt() > ref->answeredAt() || h.overlapped(*q)) continue;
        const int64_t ms = (q->answerOp->time_us - q->op->time_us) / 1000;
        auto v = violation(h, "stuck-key", "liveness", key,
                           fmt::format("r{} (to {}) got no answer to key {} in {} ms: the server held it while no "
                                       "other request of the key ran and no fault fired, past the declared lease of "
                                       "{} ms, and the client gave up; the key completed only later (r{})",
                                       q->r->id, q->r->server, key, ms, h.spec.policy.leaseMs, ref->r->id),
                           {q, ref});
        v.observed = fmt::format("no answer in {} ms", ms);
        out.push_back(std::move(v));
        break;
      }
      continue;
    }
    // The key's last request (the client retries a key whose own payload has no 2xx answer until it gets a
    // definite one): a definite answer is a 2xx or a 4xx other than the in-flight status (the server bound
    // the key to another payload first: a mismatch, judged by its own invariant; any other 4xx is
    // http:status's to judge).
    std::vector<const Req*> qs;
    for (const auto& q : h.reqs)
      if (HttpView::keyed(q) && q.r->key == key) qs.push_back(&q);
    const Req* last = qs.empty() ? nullptr : qs.back();
    bool inflight = last && last->final() && h.spec.policy.inFlight != 0 && last->a->status == h.spec.policy.inFlight;
    // A 5xx is definite when the policy stores it (replay_5xx): http:replay judges that it was kept.
    if (last && last->final() && !inflight && (last->a->status < 500 || h.spec.policy.replay5xx)) continue;
    if (limited) continue; // said once above
    if (last && last->a && last->a->outcome == "too-large") {
      unknown.push_back(fmt::format("key {}'s last answer (r{}) went on past the {} MiB the client reads of an answer",
                                    key, last->r->id, ops::kAnswerLimit >> 20));
      continue;
    }
    std::string got = !last || !last->a ? "no answer" : last->final() ? brief(*last->a) : last->a->outcome;
    // The server that gave the last answer made no new connection after a restart (the run's note): it
    // answers with the connections the restart broke, which is why no answer came.
    std::string why;
    if (last && !last->r->server.empty()) {
      for (const Op& op : h.ops) {
        const auto* n = op.as<ops::Note>();
        if (!n || op.process != last->r->server || !n->saysNoNewConnection(last->r->server)) continue;
        why = fmt::format("; {} (its connections broke and it opened none: reconnect, or take a fresh one from the "
                          "pool, when one fails)", n->message);
      }
    }
    auto v = violation(h, inflight ? "stuck-key" : "no-answer", "liveness", key,
                       inflight ? fmt::format("key {} is in progress for good: the client retried it through the "
                                              "{} ms lease (and half a second more), and the last of its {} requests (r{}) "
                                              "still got {}", key, h.spec.policy.leaseMs, qs.size(), last->r->id, got)
                                : fmt::format("key {} never got a definite answer: the last of its {} requests{} got {}{}", key,
                                              qs.size(), last ? fmt::format(" (r{})", last->r->id) : "", got, why),
                       last ? std::vector<const Req*>{last} : std::vector<const Req*>{});
    v.observed = got;
    out.push_back(std::move(v));
  }
  return resultOf(std::move(out), unknown);
}

} // namespace idem::detail::http
