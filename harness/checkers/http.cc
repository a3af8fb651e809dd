/// The invariants of an HTTP scenario (docs/http-contract.md), each one checker named "http:NAME", read from
/// the client's requests and answers, the effects per payload reference and the ledger in the history:
///
///  exactly-once  each key's payload takes effect at most once, and once when any answer said it executed
///                (double-effect; lost-effect: an answer says done, no effect exists)
///  ledger        the ledger moved by exactly the effects that exist: effect and ledger commit together
///  replay        every 2xx answer to a key's payload is the first one: status, Location, and the body as
///                the policy compares it (replay-mismatch)                                 (http_answers.cc)
///  status        a fresh key with its payload gets the declared created status, the in-flight status or a
///                5xx; any other status is unexpected-status                               (http_answers.cc)
///  mismatch      a key reused with another payload is rejected with the declared status and takes no effect
///                (mismatch-accepted, mismatch-status)
///  missing-key   no key or a malformed one: the declared status and no effect (missing-key-accepted,
///                missing-key-status)
///  burst         copies of a burst get a 2xx or the in-flight status, never a 5xx unless a fault hit the server
///                while it ran (burst-error)
///  liveness      every key's payload ends with a 2xx answer once the client retried through the lease
///                (stuck-key: still "in flight"; no-answer: errors or no answer); unknown when the client did
///                not get to write and read every request of the schedule                  (http_answers.cc)
#include "checkers/detail.h"
#include "checkers/http.h"
#include "checkers/http_view.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace idem::detail {

namespace http {
namespace {

/// The effects of `payload` its own key may take: 1, and one more for each of its requests sent after the
/// retention (which may find the key forgotten and execute again); 0 for a payload no key is bound to.
int64_t ownAllowance(const HttpView& h, int payload) {
  for (const auto& [key, bound] : h.bound) {
    if (bound != payload) continue;
    auto qs = h.own(key);
    return 1 + std::count_if(qs.begin(), qs.end(), [&](const Req* q) { return h.pastRetention(*q); });
  }
  return 0;
}

/// How many requests the key bound to `payload` sent with it (a burst's copies each count): each may have
/// executed it once, so up to this many of its effects are that key's to explain (exactlyOnce names the
/// excess a double effect). 0 when no key is bound to it.
int64_t ownRequests(const HttpView& h, int payload) {
  for (const auto& [key, bound] : h.bound)
    if (bound == payload) return static_cast<int64_t>(h.own(key).size());
  return 0;
}

CheckResult exactlyOnce(const HttpView& h) {
  std::vector<Violation> out;
  for (const auto& [key, payload] : h.bound) {
    auto qs = h.own(key);
    int64_t n = h.effectsOf(payload);
    const int64_t allowed = ownAllowance(h, payload);
    // A request sent later but within the retention (aged_ms): the key must still be remembered.
    const Req* aged = nullptr;
    for (const Req* q : qs)
      if (!aged && q->r->agedMs > 0 && !h.pastRetention(*q)) aged = q;
    if (n > allowed && aged) {
      auto v = violation(h, "forgotten-within-retention", "exactly-once", key,
                         fmt::format("key {} took effect {} times: r{} was sent {} ms after the key's last request, "
                                     "within the declared retention of {} ms, and the key was no longer remembered",
                                     key, n, aged->r->id, aged->r->agedMs, h.spec.policy.retentionMs),
                         qs);
      v.expected = allowed;
      v.observed = n;
      out.push_back(std::move(v));
    } else if (n > allowed) {
      auto v = violation(h, "double-effect", "exactly-once", key,
                         fmt::format("key {} took effect {} times ({} requests with it: {})", key, n, qs.size(), ids(qs)), qs);
      v.expected = allowed;
      v.observed = n;
      out.push_back(std::move(v));
    } else if (n == 0) {
      if (const Req* ref = h.reference(key)) {
        // Why, when the history shows it: a COMMIT answered ROLLBACK that the server took for success; a
        // COMMIT that never reached PostgreSQL, the answer written without waiting for it; a COMMIT that
        // took effect without the effect (the key's state alone).
        std::string why = h.committedDuring(*ref) ? "the key's state committed without the effect"
                                                  : "nothing the server committed while it was in flight holds it";
        if (const ops::Step* c = h.failedCommitDuring(*ref))
          why = fmt::format("while r{} was in flight {}'s {}#{} was answered ROLLBACK (a statement of its transaction "
                            "had failed, so nothing of it took effect), and the server answered success anyway",
                            ref->r->id, ref->r->server, c->verb, c->k);
        else if (const ops::Step* u = h.unsentCommitDuring(*ref); u && u->outcome == ops::StepOutcome::Answered)
          why = fmt::format("while r{} was in flight {}'s {}#{} got an error in PostgreSQL's place (it never reached "
                            "PostgreSQL, so nothing of its transaction took effect), and the server answered success "
                            "anyway", ref->r->id, ref->r->server, u->verb, u->k);
        else if (u)
          why = fmt::format("while r{} was in flight {}'s {}#{} never reached PostgreSQL ({}), so nothing of its "
                            "transaction took effect, and r{} was answered success all the same: the server wrote "
                            "its answer without waiting for its COMMIT",
                            ref->r->id, ref->r->server, u->verb, u->k,
                            u->outcome == ops::StepOutcome::KilledBefore ? "the process was killed before it"
                                                                         : "its connection was dropped before it",
                            ref->r->id);
        auto v = violation(h, "lost-effect", "exactly-once", key,
                           fmt::format("r{} was answered {} for key {}, but no effect of it exists: {}", ref->r->id,
                                       ref->a->status, key, why),
                           {ref});
        v.expected = 1;
        v.observed = 0;
        out.push_back(std::move(v));
      }
    }
  }
  // Effects of a payload no request with its own key sent (a mismatch, a request without a key) are judged
  // by their own invariants; a reference no request carried at all is a phantom.
  std::set<std::string> known;
  for (const auto& [e, ref] : h.refs) known.insert(ref);
  for (const auto& [ref, n] : h.effects) {
    if (known.count(ref)) continue;
    Violation v;
    v.kind = "phantom";
    v.invariant = "http:exactly-once";
    v.observed = n;
    v.expected = 0;
    v.message = fmt::format("{} effect{} with reference {}, which no request of the client carried", n, n == 1 ? "" : "s", ref);
    out.push_back(std::move(v));
  }
  return resultOf(std::move(out), {});
}

CheckResult ledger(const HttpView& h, const Scenario& s) {
  if (!s.http->ledger) return resultOf({}, {});
  const auto& led = *s.http->ledger;
  if (!h.initial || !h.final) throw std::runtime_error("no initial or final state");
  auto rows = [](const Observed& o) {
    std::map<std::string, int64_t> m;
    auto it = o.find("ledger");
    if (it != o.end())
      for (const auto& r : it->second)
        if (r.size() == 2 && r[0] && r[1]) m[*r[0]] = wholeNumber(*r[1], "http.ledger.observed");
    return m;
  };
  auto before = rows(h.initial->observed), after = rows(h.final->observed);
  std::map<std::string, int64_t> expected = before;
  std::map<std::string, std::vector<int>> movedBy;
  for (const auto& e : h.plan.schedule.events) {
    int64_t n = h.effectsOf(e.n);
    if (n == 0) continue;
    auto k = e.fields.find(led.key), f = e.fields.find(led.field);
    if (k == e.fields.end() || f == e.fields.end()) continue;
    expected[k->second] += led.sign * n * wholeNumber(f->second, "the schedule's " + led.field);
    movedBy[k->second].push_back(e.n);
  }
  std::vector<Violation> out;
  for (const auto& [key, want] : expected) {
    auto it = after.find(key);
    int64_t got = it == after.end() ? 0 : it->second;
    if (got == want) continue;
    Violation v;
    v.kind = "ledger";
    v.invariant = "http:ledger";
    v.key = key;
    v.expected = want;
    v.observed = got;
    v.events = movedBy[key];
    v.kill_point = h.killText();
    v.message = fmt::format("{} {} is {}, but the {} effect{} that exist make it {}: the effect and the ledger did not "
                            "commit together", led.key, key, got, movedBy[key].size(), movedBy[key].size() == 1 ? "" : "s", want);
    out.push_back(std::move(v));
  }
  return resultOf(std::move(out), {});
}

CheckResult mismatch(const HttpView& h) {
  std::vector<Violation> out;
  const auto& pol = h.spec.policy;
  for (const auto& [key, payload] : h.bound) {
    const Req* ref = h.reference(key);
    for (const Req* qp : h.mismatches(key)) {
      const Req& q = *qp;
      const int body = q.r->body;
      // A payload another key sends as its own (a schedule file may reuse it): that key's effects of it are
      // its own to judge (exactly-once), and the same reference tells no effect of the two apart; what is
      // beyond them is this request's.
      const int64_t n = h.effectsOf(body), allowed = ownAllowance(h, body);
      // Refused as declared while the payload's own key executed it more often than allowed: that key's
      // requests explain every effect (its double effect is named there); nothing shows this one took effect.
      const bool refused = q.final() && q.a->status == pol.mismatch;
      const bool ownExplain = n <= std::max(allowed, ownRequests(h, body));
      if (q.ok() || (n > allowed && !(refused && ownExplain))) {
        bool other = q.ok() && ref && q.a->digest == ref->a->digest;
        std::string got = q.ok()      ? fmt::format("got {}{}", brief(*q.a), other ? fmt::format(", the answer of r{}", ref->r->id) : "")
                          : q.final() ? fmt::format("got {}", q.a->status)
                                      : std::string("its answer was lost");
        auto v = violation(h, "mismatch-accepted", "mismatch", key,
                           fmt::format("r{} reused key {} (bound to payload {}) with payload {} and {}{}", q.r->id, key,
                                       payload, body, got, n > allowed ? "; that payload took effect too" : ""),
                           {&q});
        v.expected = pol.mismatch;
        v.observed = q.final() ? nlohmann::json(q.a->status) : nlohmann::json(fmt::format("{} effect(s)", n - allowed));
        out.push_back(std::move(v));
        continue;
      }
      if (!q.final() || q.a->status == pol.mismatch || q.a->status >= 500) continue;
      // Rejected as in flight: another request of the key ran at the same time (the first, or a burst's copy).
      if (pol.inFlight != 0 && q.a->status == pol.inFlight && h.overlapped(q)) continue;
      auto v = violation(h, "mismatch-status", "mismatch", key,
                         fmt::format("r{} reused key {} with payload {} and got {}; the declared status is {}", q.r->id,
                                     key, body, q.a->status, pol.mismatch),
                         {&q});
      v.expected = pol.mismatch;
      v.observed = q.a->status;
      out.push_back(std::move(v));
    }
  }
  checkReordered(h, out);
  return resultOf(std::move(out), {});
}

CheckResult missingKey(const HttpView& h) {
  std::vector<Violation> out;
  const int want = h.spec.policy.missingKey;
  for (const auto& q : h.reqs) {
    if (q.r->role != "no-key" && q.r->role != "bad-key") continue;
    // An opaque key is any non-empty value: only an empty one is malformed.
    if (q.r->role == "bad-key" && h.spec.keyFormat == "opaque" && !q.r->keyValue.empty()) continue;
    const int body = q.r->body;
    int64_t allowed = h.boundPayload(body) ? 1 : 0; // a payload also sent under a key of its own
    int64_t n = h.effectsOf(body);
    std::string what = q.r->keyHeader ? fmt::format("a malformed key ({})", nlohmann::json(q.r->keyValue).dump()) : "no key";
    // The same payload reused under a key as a mismatch: an effect of it is that request's to explain.
    bool mismatchCarried = std::any_of(h.reqs.begin(), h.reqs.end(), [&](const Req& o) {
      return HttpView::keyed(o) && o.r->body == body && h.bound.at(o.r->key) != body;
    });
    if (q.ok() || (n > allowed && !mismatchCarried)) {
      auto v = violation(h, "missing-key-accepted", "missing-key", 0,
                         fmt::format("r{} sent payload {} with {} and {}", q.r->id, body, what,
                                     q.ok() ? fmt::format("got {}{}", brief(*q.a), n > allowed ? ", and it took effect" : "")
                                            : std::string("it took effect")),
                         {&q});
      v.events = {body};
      v.expected = want;
      v.observed = q.final() ? nlohmann::json(q.a->status) : nlohmann::json(n);
      out.push_back(std::move(v));
    } else if (q.final() && q.a->status != want && q.a->status < 500) {
      auto v = violation(h, "missing-key-status", "missing-key", 0,
                         fmt::format("r{} sent payload {} with {} and got {}; the declared status is {}", q.r->id, body,
                                     what, q.a->status, want),
                         {&q});
      v.events = {body};
      v.expected = want;
      v.observed = q.a->status;
      out.push_back(std::move(v));
    }
  }
  return resultOf(std::move(out), {});
}

CheckResult burst(const HttpView& h) {
  std::vector<Violation> out;
  const auto& pol = h.spec.policy;
  for (const auto& q : h.reqs) {
    if (!q.r->burst || !HttpView::keyed(q) || !q.final() || h.bound.at(q.r->key) != q.r->body) continue;
    int st = q.a->status;
    // A 5xx is a copy's honest answer when a fault hit the server while it ran, or a restart before it left
    // the server a pooled connection it killed (the client retries it).
    bool fine = (st >= 200 && st < 300) || (pol.inFlight != 0 && st == pol.inFlight) ||
                (st >= 500 && (h.faultedDuring(q) || h.staleAfterRestart(q)));
    if (fine) continue;
    auto v = violation(h, "burst-error", "burst", q.r->key,
                       fmt::format("r{}, copy {} of a burst with key {}, got {}; a copy gets the first answer{}, never "
                                   "another status", q.r->id, q.r->burst, q.r->key, brief(*q.a),
                                   pol.inFlight ? fmt::format(" or {}", pol.inFlight) : ""),
                       {&q});
    v.observed = st;
    out.push_back(std::move(v));
  }
  return resultOf(std::move(out), {});
}

} // namespace
} // namespace http

std::vector<std::pair<std::string, std::function<CheckResult()>>> httpCheckers(const Scenario& s, const std::vector<Op>& ops) {
  auto plans = recordsOf<ops::Plan>(ops);
  if (plans.empty()) throw std::runtime_error("no plan op");
  auto view = std::make_shared<http::HttpView>(*s.http, ops, *plans.front().second);
  auto need = [view]() {
    if (!view->final) throw std::runtime_error("no final op: the run did not reach its final read");
  };
  return {
      {"http:exactly-once", [view, need] { need(); return http::exactlyOnce(*view); }},
      {"http:ledger", [view, need, &s] { need(); return http::ledger(*view, s); }},
      {"http:replay", [view] { return http::checkReplays(*view); }},
      {"http:status", [view] { return http::checkStatuses(*view); }},
      {"http:mismatch", [view, need] { need(); return http::mismatch(*view); }},
      {"http:missing-key", [view, need] { need(); return http::missingKey(*view); }},
      {"http:burst", [view] { return http::burst(*view); }},
      {"http:liveness", [view, need] { need(); return http::checkLiveness(*view); }},
  };
}

} // namespace idem::detail
