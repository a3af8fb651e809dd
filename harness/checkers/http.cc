/// The invariants of an HTTP scenario (docs/http-contract.md), each one checker named "http:NAME", read from
/// the client's requests and answers, the effects per payload reference and the ledger in the history:
///
///  exactly-once  each key's payload takes effect at most once, and once when any answer said it executed
///                (double-effect; lost-effect: an answer says done, no effect exists)
///  ledger        the ledger moved by exactly the effects that exist: effect and ledger commit together
///  replay        every 2xx answer to a key's payload is the first one: status, body, Location (replay-mismatch)
///  mismatch      a key reused with another payload is rejected with the declared status and takes no effect
///                (mismatch-accepted, mismatch-status)
///  missing-key   no key or a malformed one: the declared status and no effect (missing-key-accepted,
///                missing-key-status)
///  burst         copies of a burst get a 2xx or the in-flight status, never a 5xx (burst-error)
///  liveness      every key's payload ends with a 2xx answer once the client retried through the lease
///                (stuck-key: still "in flight"; no-answer: errors or no answer)
#include "checkers/detail.h"
#include "checkers/http.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace idem::detail {

namespace {

struct Req {
  const Op* op = nullptr;
  const ops::Request* r = nullptr;
  const Op* answerOp = nullptr;
  const ops::Response* a = nullptr;
  bool final() const { return a && a->final(); }
  bool ok() const { return final() && a->status >= 200 && a->status < 300; }
  int64_t answeredAt() const { return answerOp ? answerOp->index : INT64_MAX; }
};

struct HttpView {
  const HttpSpec& spec;
  const ops::Plan& plan;
  const ops::Initial* initial = nullptr;
  const ops::Final* final = nullptr;
  std::vector<Req> reqs;                     ///< in the order written
  std::map<std::string, int64_t> effects;    ///< ref -> count
  std::map<int, std::string> refs;           ///< event -> its payload's ref
  std::vector<std::string> kills;            ///< kill points that fired
  /// Key -> the payload it is bound to: the one of its payloads that took effect (the first sent of them
  /// when several did: a violation), else the first one sent with it. A key's other payloads are mismatches,
  /// whichever request the client meant as the original (in a race, either payload may win).
  std::map<int, int> bound;
  std::map<int, std::vector<int>> executed;  ///< key -> its payloads that took effect, in the order sent

  HttpView(const HttpSpec& s, const std::vector<Op>& ops, const ops::Plan& p) : spec(s), plan(p) {
    std::map<int, size_t> byId;
    for (const Op& op : ops) {
      if (auto* r = op.as<ops::Request>()) {
        byId[r->id] = reqs.size();
        reqs.push_back({&op, r, nullptr, nullptr});
        refs[r->body] = r->ref;
      } else if (auto* a = op.as<ops::Response>()) {
        auto it = byId.find(a->id);
        if (it != byId.end()) reqs[it->second].answerOp = &op, reqs[it->second].a = a;
      } else if (auto* i = op.as<ops::Initial>()) {
        initial = i;
      } else if (auto* f = op.as<ops::Final>()) {
        final = f;
      } else if (auto* k = op.as<ops::FaultOp>(); k && k->fault.isKill()) {
        kills.push_back(k->fault.str());
      }
    }
    if (final) {
      auto it = final->observed.find("effects");
      if (it != final->observed.end())
        for (const auto& row : it->second)
          if (row.size() == 2 && row[0] && row[1]) effects[*row[0]] += std::stoll(*row[1]);
    }
    for (const auto& q : reqs) {
      if (!keyed(q)) continue;
      auto& ex = executed[q.r->key];
      if (effectsOf(q.r->body) > 0 && std::find(ex.begin(), ex.end(), q.r->body) == ex.end()) ex.push_back(q.r->body);
      if (!bound.count(q.r->key)) bound[q.r->key] = q.r->body;
    }
    for (const auto& [key, ex] : executed)
      if (!ex.empty()) bound[key] = ex.front();
  }

  /// A request with a well-formed key (the client's keys are fresh UUIDs, one per key event).
  static bool keyed(const Req& q) { return q.r->keyHeader && q.r->key > 0; }
  int64_t effectsOf(int event) const {
    auto r = refs.find(event);
    if (r == refs.end()) return 0;
    auto it = effects.find(r->second);
    return it == effects.end() ? 0 : it->second;
  }
  /// Whether `event` is the payload some key is bound to.
  bool boundPayload(int event) const {
    return std::any_of(bound.begin(), bound.end(), [&](const auto& kv) { return kv.second == event; });
  }
  /// The requests with key `key` and the payload it is bound to.
  std::vector<const Req*> own(int key) const {
    std::vector<const Req*> out;
    auto b = bound.find(key);
    for (const auto& q : reqs)
      if (keyed(q) && q.r->key == key && b != bound.end() && q.r->body == b->second) out.push_back(&q);
    return out;
  }
  /// The requests with key `key` and another payload than its bound one.
  std::vector<const Req*> mismatches(int key) const {
    std::vector<const Req*> out;
    auto b = bound.find(key);
    for (const auto& q : reqs)
      if (keyed(q) && q.r->key == key && b != bound.end() && q.r->body != b->second) out.push_back(&q);
    return out;
  }
  /// The first 2xx answer to the key's bound payload, in the order answers arrived.
  const Req* reference(int key) const {
    const Req* best = nullptr;
    for (const Req* q : own(key))
      if (q->ok() && (!best || q->answeredAt() < best->answeredAt())) best = q;
    return best;
  }
  std::string killText() const { return kills.empty() ? "" : kills.back(); }
};

std::string brief(const ops::Response& a) {
  std::string body = a.body.size() > 80 ? a.body.substr(0, 77) + "..." : a.body;
  return fmt::format("{}{}{}", a.status, a.location.empty() ? "" : " Location " + a.location,
                     body.empty() ? "" : " " + body);
}

Violation violation(const HttpView& h, const char* kind, const char* inv, int key, std::string message,
                    std::vector<const Req*> cited) {
  Violation v;
  v.kind = kind;
  v.invariant = fmt::format("http:{}", inv);
  v.key = key ? fmt::format("key {}", key) : "";
  if (key) v.events.push_back(key);
  v.kill_point = h.killText();
  v.message = std::move(message);
  for (const Req* q : cited) {
    v.ops.push_back(q->op->index);
    if (q->answerOp) v.ops.push_back(q->answerOp->index);
  }
  return v;
}

std::string ids(const std::vector<const Req*>& qs) {
  std::string out;
  for (const Req* q : qs) out += (out.empty() ? "r" : ", r") + std::to_string(q->r->id);
  return out;
}

CheckResult exactlyOnce(const HttpView& h) {
  std::vector<Violation> out;
  for (const auto& [key, payload] : h.bound) {
    auto qs = h.own(key);
    int64_t n = h.effectsOf(payload);
    // A request after the retention may find the key forgotten and execute again.
    const int64_t allowed = 1 + std::count_if(qs.begin(), qs.end(), [](const Req* q) { return q->r->afterRetention; });
    if (n > allowed) {
      auto v = violation(h, "double-effect", "exactly-once", key,
                         fmt::format("key {} took effect {} times ({} requests with it: {})", key, n, qs.size(), ids(qs)), qs);
      v.expected = allowed;
      v.observed = n;
      out.push_back(std::move(v));
    } else if (n == 0) {
      if (const Req* ref = h.reference(key)) {
        auto v = violation(h, "lost-effect", "exactly-once", key,
                           fmt::format("r{} was answered {} for key {}, but no effect of it exists: the key's state "
                                       "committed without the effect", ref->r->id, ref->a->status, key),
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
        if (r.size() == 2 && r[0] && r[1]) m[*r[0]] = std::stoll(*r[1]);
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
    expected[k->second] += led.sign * n * std::stoll(f->second);
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

bool overlapped(const HttpView& h, const Req& q);

CheckResult replay(const HttpView& h) {
  std::vector<Violation> out;
  for (const auto& [key, payload] : h.bound) {
    const Req* ref = h.reference(key);
    if (!ref) continue;
    bool forgotten = false; // from a request after the retention on, the key may be a fresh one
    for (const Req* q : h.own(key)) {
      forgotten = forgotten || q->r->afterRetention;
      if (forgotten || q == ref || !q->final()) continue;
      const auto& a = *q->a;
      bool sentAfter = q->op->index > ref->answerOp->index; // a retry of a completed request
      bool faithful = a.status == ref->a->status && a.digest == ref->a->digest && a.location == ref->a->location;
      if (faithful) continue;
      bool inflight = h.spec.policy.inFlight != 0 && a.status == h.spec.policy.inFlight;
      if (!sentAfter && (inflight || a.status >= 500)) continue; // it overlapped the first: judged by burst/liveness
      if (inflight && overlapped(h, *q)) continue; // another retry of the key was running: "in flight" is true
      if (a.status >= 500) continue; // a server error on a retry is the server's to have; liveness judges the end
      if (!(a.status >= 200 && a.status < 300) && !sentAfter) continue;
      std::vector<std::string> diff;
      if (a.status != ref->a->status) diff.push_back(fmt::format("status {} where r{} got {}", a.status, ref->r->id, ref->a->status));
      if (a.location != ref->a->location)
        diff.push_back(fmt::format("Location {} where r{} got {}", a.location.empty() ? "missing" : a.location, ref->r->id,
                                   ref->a->location.empty() ? "none" : ref->a->location));
      if (a.digest != ref->a->digest) diff.push_back(fmt::format("another body than r{}'s", ref->r->id));
      auto v = violation(h, "replay-mismatch", "replay", key,
                         fmt::format("r{} {} key {} and got {}: {}", q->r->id, sentAfter ? "retried the completed" : "sent",
                                     key, brief(a), fmt::format("{}", fmt::join(diff, "; "))),
                         {ref, q});
      v.expected = brief(*ref->a);
      v.observed = brief(a);
      out.push_back(std::move(v));
    }
  }
  return resultOf(std::move(out), {});
}

/// Whether another request with the key ran while `q` did (written before `q`'s answer, answered after `q`
/// was written).
bool overlapped(const HttpView& h, const Req& q) {
  for (const auto& o : h.reqs) {
    if (&o == &q || o.r->key != q.r->key || !o.r->keyHeader) continue;
    if (o.op->index < q.answeredAt() && o.answeredAt() > q.op->index) return true;
  }
  return false;
}

CheckResult mismatch(const HttpView& h) {
  std::vector<Violation> out;
  const auto& pol = h.spec.policy;
  for (const auto& [key, payload] : h.bound) {
    const Req* ref = h.reference(key);
    for (const Req* qp : h.mismatches(key)) {
      const Req& q = *qp;
      const int body = q.r->body;
      int64_t n = h.effectsOf(body);
      if (q.ok() || n > 0) {
        bool other = q.ok() && ref && q.a->digest == ref->a->digest;
        std::string got = q.ok() ? fmt::format("got {}{}", brief(*q.a), other ? fmt::format(", the answer of r{}", ref->r->id) : "")
                                 : std::string("its answer was lost");
        auto v = violation(h, "mismatch-accepted", "mismatch", key,
                           fmt::format("r{} reused key {} (bound to payload {}) with payload {} and {}{}", q.r->id, key,
                                       payload, body, got, n > 0 ? "; that payload took effect too" : ""),
                           {&q});
        v.expected = pol.mismatch;
        v.observed = q.final() ? nlohmann::json(q.a->status) : nlohmann::json(fmt::format("{} effect(s)", n));
        out.push_back(std::move(v));
        continue;
      }
      if (!q.final() || q.a->status == pol.mismatch || q.a->status >= 500) continue;
      // Rejected as in flight: another request of the key ran at the same time (the first, or a burst's copy).
      if (pol.inFlight != 0 && q.a->status == pol.inFlight && overlapped(h, q)) continue;
      auto v = violation(h, "mismatch-status", "mismatch", key,
                         fmt::format("r{} reused key {} with payload {} and got {}; the declared status is {}", q.r->id,
                                     key, body, q.a->status, pol.mismatch),
                         {&q});
      v.expected = pol.mismatch;
      v.observed = q.a->status;
      out.push_back(std::move(v));
    }
  }
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
    bool fine = (st >= 200 && st < 300) || (pol.inFlight != 0 && st == pol.inFlight);
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

CheckResult liveness(const HttpView& h, const std::vector<std::string>& reasons) {
  std::vector<Violation> out;
  std::vector<std::string> unknown;
  const bool limited = h.final && h.final->end == ops::RunEnd::Limit;
  for (const auto& [key, payload] : h.bound) {
    if (h.reference(key)) continue;
    // The key's last request (the client retries a key whose own payload has no 2xx answer until it gets a
    // definite one): a definite answer is a 2xx or a 4xx other than the in-flight status (the server bound
    // the key to another payload first: a mismatch, judged by its own invariant).
    std::vector<const Req*> qs;
    for (const auto& q : h.reqs)
      if (HttpView::keyed(q) && q.r->key == key) qs.push_back(&q);
    const Req* last = qs.empty() ? nullptr : qs.back();
    bool inflight = last && last->final() && h.spec.policy.inFlight != 0 && last->a->status == h.spec.policy.inFlight;
    if (last && last->final() && !inflight && last->a->status < 500) continue;
    if (limited) {
      unknown.push_back(fmt::format("key {} had no definite answer when the run ended at a limit ({})", key, h.final->reason));
      continue;
    }
    std::string got = !last || !last->a ? "no answer" : last->final() ? brief(*last->a) : last->a->outcome;
    auto v = violation(h, inflight ? "stuck-key" : "no-answer", "liveness", key,
                       inflight ? fmt::format("key {} is in progress for good: the client retried it through the "
                                              "{} ms lease (and half a second more), and the last of its {} requests (r{}) "
                                              "still got {}", key, h.spec.policy.leaseMs, qs.size(), last->r->id, got)
                                : fmt::format("key {} never got a definite answer: the last of its {} requests{} got {}", key,
                                              qs.size(), last ? fmt::format(" (r{})", last->r->id) : "", got),
                       last ? std::vector<const Req*>{last} : std::vector<const Req*>{});
    v.observed = got;
    out.push_back(std::move(v));
  }
  for (const auto& r : reasons) unknown.push_back(r);
  return resultOf(std::move(out), unknown);
}

} // namespace

std::vector<std::pair<std::string, std::function<CheckResult()>>> httpCheckers(const Scenario& s, const std::vector<Op>& ops) {
  auto plans = recordsOf<ops::Plan>(ops);
  if (plans.empty()) throw std::runtime_error("no plan op");
  auto view = std::make_shared<HttpView>(*s.http, ops, *plans.front().second);
  auto need = [view]() {
    if (!view->final) throw std::runtime_error("no final op: the run did not reach its final read");
  };
  return {
      {"http:exactly-once", [view, need] { need(); return exactlyOnce(*view); }},
      {"http:ledger", [view, need, &s] { need(); return ledger(*view, s); }},
      {"http:replay", [view] { return replay(*view); }},
      {"http:mismatch", [view, need] { need(); return mismatch(*view); }},
      {"http:missing-key", [view, need] { need(); return missingKey(*view); }},
      {"http:burst", [view] { return burst(*view); }},
      {"http:liveness", [view, need] { need(); return liveness(*view, {}); }},
  };
}

} // namespace idem::detail
