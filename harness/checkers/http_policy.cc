/// The HTTP policy's declarations beyond the first answer (docs/http-contract.md, "The declared policy"):
///
///  replay_5xx true      the key's first final answer, when a 5xx, is stored: every later request of the key
///                       gets it again (replay-mismatch), and none executes (executed-after-5xx)
///  in_flight "wait"     a request that arrives while another of its key runs waits for it and gets its
///                       answer: an error status is in-flight-rejected, an answer later than lease_ms after
///                       the one it waited for is wait-past-lease (its own execution: http:exactly-once)
///  payload_equivalence  a retry with its fields reordered is the same payload under "json" and "form"
///                       (replayed, never the mismatch status: reordered-rejected) and another one under
///                       "bytes" (the mismatch status, never a 2xx: reordered-accepted)
#include "checkers/detail.h"
#include "checkers/http_view.h"

#include <fmt/format.h>

#include <algorithm>

namespace idem::detail::http {

namespace {

/// How long past the declared lease a waiting request may take (the client's own margin, http_execute.cc).
constexpr int64_t kWaitMarginMs = 500;

} // namespace

void checkStored5xx(const HttpView& h, std::vector<Violation>& out) {
  const auto& pol = h.spec.policy;
  if (!pol.replay5xx) return;
  for (const auto& [key, payload] : h.bound) {
    auto qs = h.own(key);
    // The key's first final answer, in the order answers arrived.
    const Req* first = nullptr;
    for (const Req* q : qs)
      if (q->final() && !(pol.inFlight != 0 && q->a->status == pol.inFlight) && (!first || q->answeredAt() < first->answeredAt()))
        first = q;
    // Only a 5xx that answered the key alone is stored for sure: a burst's copy or one that overlapped
    // another request of the key may have lost a race to it.
    if (!first || first->a->status < 500 || first->r->burst || h.overlapped(*first)) continue;
    // Nor one the server gave while a fault cut it off from its store (a dropped connection, a restart, a
    // FATAL error that ends its session): it could not store what it answered.
    if (std::any_of(h.faults.begin(), h.faults.end(), [&](const RequestFault& f) {
          const bool cut = f.fault.kind == "drop" || f.fault.kind == "restart" ||
                           (f.fault.kind == "error" && !f.fault.args.empty() && f.fault.args[0].rfind("57P", 0) == 0);
          return cut && f.op > first->op->index && f.op < first->answeredAt();
        }) ||
        h.staleAfterRestart(*first)) // or on a connection a restart before it had killed
      continue;
    const auto& stored = *first->a;
    for (const Req* q : qs) {
      if (h.pastRetention(*q)) break; // the key may be forgotten from here on
      if (q == first || !q->final() || q->op->index < first->answeredAt()) continue;
      const auto& a = *q->a;
      if (a.status == stored.status && a.digest == stored.digest) continue;
      if (pol.inFlight != 0 && a.status == pol.inFlight && h.overlapped(*q)) continue;
      const bool executed = q->ok() && h.effectsOf(payload) > 0;
      auto v = violation(h, executed ? "executed-after-5xx" : "replay-mismatch", "replay", key,
                         executed ? fmt::format("r{} retried key {} after r{} was answered {}, and it executed: got {}; the "
                                                "policy stores a 5xx (replay_5xx), so a retry must get it again",
                                                q->r->id, key, first->r->id, stored.status, brief(a))
                                  : fmt::format("r{} retried key {} after r{} was answered {} and got {}; the policy stores "
                                                "a 5xx (replay_5xx): a retry gets it again", q->r->id, key, first->r->id,
                                                stored.status, brief(a)),
                         {first, q});
      v.expected = brief(stored);
      v.observed = brief(a);
      out.push_back(std::move(v));
      break; // one per key
    }
  }
}

void checkInFlightWait(const HttpView& h, std::vector<Violation>& out) {
  const auto& pol = h.spec.policy;
  if (pol.inFlight != 0) return;
  for (const auto& [key, payload] : h.bound) {
    for (const Req* q : h.own(key)) {
      if (q->r->burst || !q->final() || h.otherPayload(*q) || !h.overlapped(*q)) continue;
      const int st = q->a->status;
      // The requests of the key that ran while q did and were answered before it: what q waited for.
      const Req* waited = nullptr;
      for (const auto& o : h.reqs)
        if (&o != q && HttpView::keyed(o) && o.r->key == key && o.op->index < q->answeredAt() && o.final() &&
            o.answeredAt() < q->answeredAt() && o.answeredAt() > q->op->index &&
            (!waited || o.answeredAt() > waited->answeredAt()))
          waited = &o;
      // A waiter may give up once it has waited the lease while the request of its key still ran: a server
      // cannot tell a slow request from a lost one (PostgreSQL's lock_timeout set to the lease).
      const bool gaveUp = (q->answerOp->time_us - q->op->time_us) / 1000 >= pol.leaseMs &&
                          std::any_of(h.reqs.begin(), h.reqs.end(), [&](const Req& o) {
                            return &o != q && HttpView::keyed(o) && o.r->key == key && o.op->index < q->op->index &&
                                   (!o.final() || o.answeredAt() > q->answeredAt());
                          });
      if (st >= 400 && st < 500 && st != pol.mismatch && !gaveUp) {
        auto v = violation(h, "in-flight-rejected", "replay", key,
                           fmt::format("r{} sent key {} while another request of it ran and got {}; the policy declares "
                                       "in_flight \"wait\": it waits for that request and gets its answer", q->r->id, key,
                                       brief(*q->a)),
                           {q});
        v.expected = "the first request's answer";
        v.observed = st;
        out.push_back(std::move(v));
        continue;
      }
      if (!waited || st >= 500) continue;
      // A fault between the two answers (a delay, a pause, a restart of a server) is time the server did not
      // choose to wait: only a wait of the server's own making is judged against the lease.
      if (std::any_of(h.faults.begin(), h.faults.end(), [&](const RequestFault& f) {
            return f.op > waited->answerOp->index && f.op < q->answerOp->index;
          }))
        continue;
      const int64_t ms = (q->answerOp->time_us - waited->answerOp->time_us) / 1000;
      if (ms <= pol.leaseMs + kWaitMarginMs) continue;
      auto v = violation(h, "wait-past-lease", "replay", key,
                         fmt::format("r{} waited for r{} of key {} and got its answer {} ms after r{}'s, past the declared "
                                     "lease of {} ms", q->r->id, waited->r->id, key, ms, waited->r->id, pol.leaseMs),
                         {waited, q});
      v.expected = pol.leaseMs;
      v.observed = ms;
      out.push_back(std::move(v));
    }
  }
}

void checkReordered(const HttpView& h, std::vector<Violation>& out) {
  const auto& pol = h.spec.policy;
  const bool same = pol.payloadEquivalence != "bytes";
  for (const auto& q : h.reqs) {
    if (!q.r->reordered || !HttpView::keyed(q) || !q.final() || h.bound.at(q.r->key) != q.r->body) continue;
    const int st = q.a->status;
    const int key = q.r->key;
    if (same && st == pol.mismatch) {
      auto v = violation(h, "reordered-rejected", "mismatch", key,
                         fmt::format("r{} retried key {} with its payload's fields in another order and got {}; under "
                                     "payload_equivalence \"{}\" that is the same payload: it must be replayed",
                                     q.r->id, key, brief(*q.a), pol.payloadEquivalence),
                         {&q});
      v.expected = pol.created;
      v.observed = st;
      out.push_back(std::move(v));
    } else if (!same && q.ok()) {
      auto v = violation(h, "reordered-accepted", "mismatch", key,
                         fmt::format("r{} retried key {} with its payload's fields in another order and got {}; under "
                                     "payload_equivalence \"bytes\" that is another payload: the declared status is {}",
                                     q.r->id, key, brief(*q.a), pol.mismatch),
                         {&q});
      v.expected = pol.mismatch;
      v.observed = st;
      out.push_back(std::move(v));
    } else if (!same && st != pol.mismatch && st < 500 && !(pol.inFlight != 0 && st == pol.inFlight && h.overlapped(q))) {
      auto v = violation(h, "mismatch-status", "mismatch", key,
                         fmt::format("r{} retried key {} with its payload's fields in another order (another payload "
                                     "under payload_equivalence \"bytes\") and got {}; the declared status is {}",
                                     q.r->id, key, st, pol.mismatch),
                         {&q});
      v.expected = pol.mismatch;
      v.observed = st;
      out.push_back(std::move(v));
    }
  }
}

} // namespace idem::detail::http
