#include "checkers/http_view.h"

#include "checkers/tx_statement.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <stdexcept>

namespace idem::detail::http {

int64_t wholeNumber(const std::string& text, const std::string& what) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    throw std::runtime_error(fmt::format("{} returned '{}' where a whole number belongs", what, text));
  return v;
}

HttpView::HttpView(const HttpSpec& s, const std::vector<Op>& all, const ops::Plan& p) : spec(s), plan(p), ops(all) {
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
      killOps.push_back(op.index);
    }
  }
  faults = requestFaults(ops);
  if (final) {
    auto it = final->observed.find("effects");
    if (it != final->observed.end())
      for (const auto& row : it->second)
        if (row.size() == 2 && row[0] && row[1]) effects[*row[0]] += wholeNumber(*row[1], "http.effects");
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

int64_t HttpView::effectsOf(int event) const {
  auto r = refs.find(event);
  if (r == refs.end()) return 0;
  auto it = effects.find(r->second);
  return it == effects.end() ? 0 : it->second;
}

bool HttpView::boundPayload(int event) const {
  return std::any_of(bound.begin(), bound.end(), [&](const auto& kv) { return kv.second == event; });
}

std::vector<const Req*> HttpView::own(int key) const {
  std::vector<const Req*> out;
  auto b = bound.find(key);
  for (const auto& q : reqs)
    if (keyed(q) && q.r->key == key && b != bound.end() && q.r->body == b->second) out.push_back(&q);
  return out;
}

std::vector<const Req*> HttpView::mismatches(int key) const {
  std::vector<const Req*> out;
  auto b = bound.find(key);
  for (const auto& q : reqs)
    if (keyed(q) && q.r->key == key && b != bound.end() && q.r->body != b->second) out.push_back(&q);
  return out;
}

const Req* HttpView::reference(int key) const {
  const Req* best = nullptr;
  for (const Req* q : own(key))
    if (q->ok() && (!best || q->answeredAt() < best->answeredAt())) best = q;
  return best;
}

bool HttpView::overlapped(const Req& q) const {
  for (const auto& o : reqs) {
    if (&o == &q || o.r->key != q.r->key || !o.r->keyHeader) continue;
    if (o.op->index < q.answeredAt() && o.answeredAt() > q.op->index) return true;
  }
  return false;
}

bool HttpView::faultedDuring(const Req& q) const {
  return std::any_of(faults.begin(), faults.end(), [&](const RequestFault& f) {
    return !f.fault.isKill() && f.op > q.op->index && f.op < q.answeredAt();
  });
}

bool HttpView::staleAfterRestart(const Req& q) const {
  if (!q.final() || q.a->status < 500) return false;
  for (const RequestFault& f : faults) {
    if (f.fault.kind != "restart" || f.fault.args.empty() || f.op >= q.answeredAt()) continue;
    const std::string& server = f.fault.args[0]; // "pg", "valkey"
    // A request to it sent before the restart (steps are recorded at their reply, so by when they were sent).
    const int64_t at = ops[static_cast<size_t>(f.op)].time_us;
    for (const Op& op : ops) {
      const auto* s = op.as<ops::Step>();
      if (s && op.process == q.r->server && s->server == server && s->tReqUs > 0 && s->tReqUs < at) return true;
      // Or connections it held then, with no request yet (a pool opened at start-up: psycopg_pool's min_size).
      const auto* n = op.as<ops::Note>();
      if (n && op.process == q.r->server && op.index < q.answeredAt() && n->saysOpenAtRestart(q.r->server, f.fault.str()))
        return true;
    }
  }
  return false;
}

const ops::Step* HttpView::serverStepDuring(const Req& q, const std::function<bool(const ops::Step&)>& which) const {
  const int64_t end = std::min<int64_t>(q.answeredAt(), static_cast<int64_t>(ops.size()));
  for (int64_t i = q.op->index + 1; i < end; ++i) {
    const Op& op = ops[static_cast<size_t>(i)];
    const auto* s = op.as<ops::Step>();
    if (s && op.process == q.r->server && which(*s)) return s;
  }
  return nullptr;
}

const ops::Step* HttpView::failedCommitDuring(const Req& q) const {
  return serverStepDuring(q, [](const ops::Step& s) { return failedCommit(s); });
}

const ops::Step* HttpView::unsentCommitDuring(const Req& q) const {
  return serverStepDuring(q, [](const ops::Step& s) {
    using O = ops::StepOutcome;
    return txStatement(s).kind == TxStatement::Kind::Commit &&
           (s.outcome == O::KilledBefore || s.outcome == O::DroppedBefore || s.outcome == O::Answered);
  });
}

bool HttpView::committedDuring(const Req& q) const {
  return serverStepDuring(q, [](const ops::Step& s) {
    return txStatement(s).kind == TxStatement::Kind::Commit && s.replied() && !s.error && !failedCommit(s);
  }) != nullptr;
}

bool HttpView::heldWhileWritten(const Req& q) const {
  for (const auto& f : faults) {
    const auto& kind = f.fault.kind;
    if ((kind != "hold" && kind != "pause" && kind != "delay") || f.op >= q.answeredAt()) continue;
    int64_t next = -1;
    for (size_t i = static_cast<size_t>(f.op) + 1; i < ops.size() && next < 0; ++i)
      if (ops[i].process == f.process && ops[i].as<ops::Step>()) next = static_cast<int64_t>(i);
    if (next < 0 || next > q.op->index) return true;
  }
  return false;
}

bool HttpView::killedDuring(const Req& q) const {
  return std::any_of(killOps.begin(), killOps.end(), [&](int64_t k) { return k > q.op->index && k < q.answeredAt(); });
}

std::string brief(const ops::Response& a) {
  std::string body = a.body.size() > 80 ? a.body.substr(0, 77) + "..." : a.body;
  return fmt::format("{}{}{}", a.status, a.location.empty() ? "" : " Location " + a.location,
                     body.empty() ? "" : " " + body);
}

std::string briefAgainst(const ops::Response& a, const ops::Response& b) {
  const auto at = std::mismatch(a.body.begin(), a.body.end(), b.body.begin(), b.body.end()).first - a.body.begin();
  if (at < 70 || a.body == b.body) return brief(a);
  const size_t from = static_cast<size_t>(at) - 30;
  const std::string window = a.body.substr(from, 60);
  return fmt::format("{}{} ...{}{}", a.status, a.location.empty() ? "" : " Location " + a.location, window,
                     from + window.size() < a.body.size() ? "..." : "");
}

std::string ids(const std::vector<const Req*>& qs) {
  // Requests written to more than one server process (replicas, a replacement): each names its own.
  std::set<std::string> servers;
  for (const Req* q : qs) servers.insert(q->r->server);
  std::string out;
  for (const Req* q : qs) {
    out += (out.empty() ? "r" : ", r") + std::to_string(q->r->id);
    if (servers.size() > 1) out += " (" + q->r->server + ")";
  }
  return out;
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
  if (std::string hit = key ? faultsOnKey(h.faults, key) : ""; !hit.empty()) { // the faults its requests met
    v.message += "; " + hit;
    for (const auto& f : h.faults)
      for (const ops::Request* r : f.inFlight)
        if (r->keyHeader && r->key == key) v.ops.push_back(f.op);
  }
  for (const Req* q : cited) {
    v.ops.push_back(q->op->index);
    if (q->answerOp) v.ops.push_back(q->answerOp->index);
  }
  return v;
}

} // namespace idem::detail::http
