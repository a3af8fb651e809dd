/// The rows of a timeline: which ops are hot (cited by a violation, touching its entries or events, or
/// made while a consumer handled one of its entries), which are elided, and what each one says.
#include "report/html_timeline.h"

#include "checkers/sink_view.h"

#include <fmt/format.h>

#include <map>

namespace idem::html::tl {

namespace {

/// Marks as hot the steps a consumer made while handling a hot entry: per process, the steps between
/// the delivery of an entry (or the ack of the entry before it) and its own ack. That holds for consumers
/// that handle one entry at a time; as soon as a process acknowledges out of delivery order, its steps
/// are no longer attributed.
void attribute(Context& c, const std::vector<Op>& history) {
  std::map<std::string, std::vector<std::string>> queue; // process -> delivered, not yet acked
  std::set<std::string> unordered;
  for (const auto& [op, step] : recordsOf<ops::Step>(history)) {
    if (unordered.count(op->process)) continue;
    auto& q = queue[op->process];
    if (!step->delivered.empty() || step->empty) {
      for (const auto& d : step->delivered) q.push_back(d.entry);
      continue;
    }
    if (!q.empty() && c.hotEntries.count(q.front())) c.hotOps.insert(op->index);
    for (const auto& a : step->acked) {
      if (q.empty() || a != q.front()) {
        unordered.insert(op->process);
        break;
      }
      q.erase(q.begin());
    }
  }
}

} // namespace

Context contextOf(const json& run, const std::vector<Op>& history) {
  Context c;
  // An HTTP run: the client, the server processes, PostgreSQL (and Valkey only when the server used it).
  const bool http = !recordsOf<ops::Request>(history).empty();
  bool valkey = !http;
  c.lanes.push_back(http ? "client" : "producer");
  for (const auto& op : history) {
    if (op.as<ops::Spawn>() && std::find(c.lanes.begin(), c.lanes.end(), op.process) == c.lanes.end())
      c.lanes.push_back(op.process);
    if (const auto* s = op.as<ops::Send>()) c.tags[s->entry] = fmt::format("e{}{}", s->n, s->retry ? "′" : "");
    if (const auto* r = op.as<ops::Request>()) c.requestServer[r->id] = r->server;
    if (const auto* st = op.as<ops::Step>(); st && st->server == "valkey") valkey = true;
    if (const auto* st = op.as<ops::Step>(); st && st->server != "pg" && st->server != "sink" && !http)
      c.brokerTitle = serverTitle(st->server);
  }
  if (valkey) c.lanes.push_back("valkey");
  c.lanes.push_back("pg");
  // Poison events: a lane for the dead letter, which the steps that write to it reach.
  for (const auto& [op, fin] : recordsOf<ops::Final>(history)) {
    auto space = fin->deadLetterWhere.find(' ');
    if (space == std::string::npos) continue;
    c.deadLetter = fin->deadLetterWhere.substr(space + 1);
    c.lanes.push_back("dead-letter");
  }
  for (const auto& op : history) {
    const auto* st = op.as<ops::Step>();
    if (c.deadLetter.empty() || !st) continue;
    const bool table = st->server == "pg" && st->verb == "INSERT" &&
                       (std::find(st->tables.begin(), st->tables.end(), c.deadLetter) != st->tables.end() ||
                        st->detail.find(c.deadLetter) != std::string::npos);
    // A broker's write to it: an XADD to the stream, a PUBLISH to the queue, a PRODUCE to the topic.
    const bool stream = (st->verb == "XADD" || st->verb == "PUBLISH" || st->verb == "PRODUCE") && st->detail.find(c.deadLetter) != std::string::npos;
    if (table || stream) c.deadLetterOps.insert(op.index);
  }
  // The sink: a lane for the provider the consumers call, with each call record linked to its CALL step.
  bool sink = false;
  for (const auto& op : history) {
    const auto* st = op.as<ops::Step>();
    if (op.as<ops::Call>() || (st && st->server == "sink")) sink = true;
    if (const auto* s = op.as<ops::Send>()) c.eventOfId.emplace(s->eventId, s->n);
  }
  if (sink) {
    c.lanes.push_back("sink");
    c.callSteps = detail::linkCalls(history);
    for (const auto& op : history)
      for (const auto& [call, step] : c.callSteps)
        if (const auto* st = op.as<ops::Step>(); st && op.index == step) c.callVia[call] = op.process + " " + st->name();
  }
  for (const auto& viol : arr(run, "violations")) {
    for (const auto& i : arr(viol, "ops"))
      if (i.is_number()) c.hotOps.insert(i.get<int64_t>());
    for (const auto& i : arr(arr(viol, "pattern"), "ops")) // the steps its anti-pattern names
      if (i.is_number()) c.hotOps.insert(i.get<int64_t>());
    for (const auto& e : arr(viol, "entries"))
      if (e.is_string()) c.hotEntries.insert(e.get<std::string>());
    for (const auto& n : arr(viol, "events"))
      if (n.is_number()) c.hotEvents.insert(n.get<int64_t>());
  }
  attribute(c, history);
  c.holds = holdsOf(history);
  for (size_t i = 0; i < c.holds.size(); ++i) {
    c.holdFired[c.holds[i].fired] = i;
    if (c.holds[i].released >= 0) c.holdReleased[c.holds[i].released] = i;
  }
  for (const auto& [op, s] : recordsOf<ops::Send>(history)) {
    if ((c.hotEvents.count(s->n) || c.hotEntries.count(s->entry)) && s->eventId.size() >= 8) c.hotIds.insert(s->eventId);
  }
  return c;
}

namespace {

bool touchesHot(const Context& c, const Op& op) {
  if (c.hotOps.count(op.index)) return true;
  if (const auto* s = op.as<ops::Send>()) return c.hotEvents.count(s->n) || c.hotEntries.count(s->entry);
  if (const auto* k = op.as<ops::Call>()) return c.hotIds.count(k->ref) > 0; // a call of a hot event
  const auto* step = op.as<ops::Step>();
  if (!step) return false;
  for (const auto& d : step->delivered)
    if (c.hotEntries.count(d.entry)) return true;
  for (const auto& a : step->acked)
    if (c.hotEntries.count(a)) return true;
  for (const auto& id : c.hotIds)
    if (step->detail.find(id) != std::string::npos) return true;
  return false;
}

/// A fault that acted on a step (a kill, a drop, an error, …): a red row. A hold or a pause has rows of its own.
bool isKill(const Op& op) {
  const auto* f = op.as<ops::FaultOp>();
  return f != nullptr && f->fault.kind != "hold" && f->fault.kind != "pause";
}

} // namespace

std::vector<Row> rowsOf(const Context& c, const std::vector<Op>& history) {
  std::vector<Row> all;
  for (const auto& op : history) {
    if (op.as<ops::Plan>()) continue;
    all.push_back({&op, 0, touchesHot(c, op), isKill(op), c.firedAt(op.index) || c.releasedAt(op.index)});
  }
  if (all.size() <= static_cast<size_t>(kMaxRows)) return all;
  std::vector<bool> keep(all.size(), false);
  for (size_t i = 0; i < all.size(); ++i) {
    const Op& op = *all[i].op;
    bool anchor = all[i].hot || all[i].kill || all[i].hold || op.as<ops::Spawn>() || op.as<ops::Exit>() ||
                  op.as<ops::Error>() || op.as<ops::Final>();
    if (i < 8 || i + 8 >= all.size()) keep[i] = true;
    if (anchor)
      for (size_t k = i >= 3 ? i - 3 : 0; k < std::min(all.size(), i + 4); ++k) keep[k] = true;
  }
  std::vector<Row> rows;
  for (size_t i = 0; i < all.size(); ++i) {
    if (keep[i]) rows.push_back(all[i]);
    else if (!rows.empty() && rows.back().op == nullptr) ++rows.back().elided;
    else rows.push_back({nullptr, 1, false, false});
  }
  return rows;
}

namespace {

std::string tagOf(const Context& c, const std::string& id) {
  auto it = c.tags.find(id);
  return it == c.tags.end() ? id : it->second;
}

std::string observedText(const Observed& observed) {
  std::string out;
  for (const auto& [name, rows] : observed) {
    out += (out.empty() ? "" : "; ") + name + ":";
    for (const auto& r : rows) {
      std::string key, rest;
      size_t n = 0;
      for (const auto& cell : r) {
        std::string text = !cell ? "null" : cell->empty() ? "''" : *cell;
        if (n++ == 0) key = text;
        else rest += (rest.empty() ? "" : ", ") + text;
      }
      out += " " + key + "=" + (n > 2 ? "(" + rest + ")" : rest);
    }
  }
  return out;
}

std::string describeStep(const Context& c, const ops::Step& s) {
  std::string detail = s.detail;
  if (detail == s.verb) detail.clear();
  else if (detail.rfind(s.verb + " ", 0) == 0) detail = detail.substr(s.verb.size() + 1);
  detail = detail.empty() ? "" : " " + cut(detail, 56);
  std::string result;
  if (!s.delivered.empty() || s.empty) {
    for (const auto& d : s.delivered) result += (result.empty() ? "" : " ") + tagOf(c, d.entry);
    if (s.empty) result = "nothing";
  } else if (!s.acked.empty()) {
    result = "ack";
    for (const auto& a : s.acked) result += " " + tagOf(c, a);
  } else {
    result = cut(s.summary, 24);
  }
  if (result == s.verb) result.clear();
  switch (s.outcome) {
  case ops::StepOutcome::KilledBefore: result = "withheld: never reached the server"; break;
  case ops::StepOutcome::KilledAfter: result += "  (reply withheld)"; break;
  case ops::StepOutcome::DroppedBefore: result = "connection dropped before the server saw it"; break;
  case ops::StepOutcome::DroppedAfter: result += "  (connection dropped before the reply)"; break;
  case ops::StepOutcome::Forwarded: result = "sent, reply never reached the consumer"; break;
  case ops::StepOutcome::Withheld: result = "never sent"; break;
  case ops::StepOutcome::Unobserved: result = "reply not decoded"; break;
  case ops::StepOutcome::Answered: result = "answered by idemproof: " + cut(s.summary, 40); break;
  case ops::StepOutcome::Ok: break;
  }
  if (s.error && s.outcome != ops::StepOutcome::Answered) result += " (error)";
  return s.name() + detail + (result.empty() ? "" : "  → " + result);
}

/// "‖ c1 held at hold:c1:before:COMMIT#1:c2:after:XACK#1: request withheld until c2 reaches c2:after:XACK#1".
std::string heldText(const HoldSpan& h) {
  const Fault& f = h.fault;
  std::string what = f.when == When::Before ? "request" : "reply";
  std::string until = "until every other process is idle";
  if (f.args.size() == 3) until = fmt::format("until {} reaches {}:{}:{}", f.args[0], f.args[0], f.args[1], f.args[2]);
  if (f.args.size() == 1) until = fmt::format("for {} ms", f.args[0]);
  if (h.pause) {
    if (f.args.empty()) until = "for the broker's hand-over time";
    return fmt::format("‖ {} paused (SIGSTOP) at {}: {} withheld {}", h.process, f.str(), what, until);
  }
  return fmt::format("‖ {} held at {}: {} withheld {}", h.process, f.str(), what, until);
}

/// "▶ c1 released from hold:c1:before:COMMIT#1 after 12.5 ms: another process waits on a PostgreSQL lock …".
std::string releasedText(const HoldSpan& h) {
  if (h.pause && !h.atOnce)
    return fmt::format("▶ {} woken (SIGCONT) from {} after {:.1f} ms: {}", h.process, h.fault.str(),
                       static_cast<double>(h.heldUs) / 1000.0, h.why);
  if (h.atOnce) return fmt::format("▶ {} released at once from {}: {}", h.process, h.fault.str(), h.why);
  return fmt::format("▶ {} released from {} after {:.1f} ms: {}", h.process, h.fault.str(),
                     static_cast<double>(h.heldUs) / 1000.0, h.why);
}

/// An `age` fault's row: the simulated time that passed there, and what it did to the dedup state.
std::string agedText(const std::string& proc, const ops::FaultOp& f) {
  const ops::Aged& a = *f.aged;
  std::string keys = a.keys ? fmt::format(": {} key{} expired, {} moved", a.expired, a.expired == 1 ? "" : "s", a.moved)
                            : ": no keys";
  std::string rows = !a.prune.empty()   ? fmt::format(", {} row{} pruned", a.pruned, a.pruned == 1 ? "" : "s")
                     : !a.skipped.empty() ? ", no prune (" + a.skipped + ")"
                                          : "";
  return fmt::format("⏩ {}: {} — simulated time +{} ms for the dedup state{}{}", proc, f.fault.str(), a.ms, keys, rows);
}

} // namespace

std::string describe(const Context& c, const Op& op) {
  const std::string& proc = op.process;
  if (const auto* s = op.as<ops::Send>()) {
    std::string fields;
    for (const auto& [k, val] : s->fields)
      if (k != "event_id" && k != "n") fields += (fields.empty() ? "" : " ") + k + "=" + val;
    return fmt::format("send event {}{} as {}  {}", s->n, s->retry ? " again (retry)" : "", s->entry, fields);
  }
  if (const auto* s = op.as<ops::Spawn>()) return fmt::format("{} starts (pid {}, {})", proc, s->pid, s->restart);
  if (const HoldSpan* h = c.firedAt(op.index)) return heldText(*h);
  if (const HoldSpan* h = c.releasedAt(op.index); h && h->noted) return releasedText(*h);
  if (const auto* f = op.as<ops::FaultOp>(); f && f->aged) return agedText(proc, *f);
  if (const auto* f = op.as<ops::FaultOp>())
    return f->fault.isKill() ? fmt::format("✕ {} SIGKILLed at {}", proc, f->fault.str())
                             : fmt::format("⚡ {}: fault {}", proc, f->fault.str());
  if (const auto* e = op.as<ops::Exit>()) {
    std::string how = e->signal ? fmt::format("signal {}", *e->signal) : fmt::format("status {}", e->status.value_or(-1));
    return fmt::format("{} exits: {}{}", proc, how, e->by == "harness" ? " (stopped by idemproof)" : " (by itself)");
  }
  if (const auto* i = op.as<ops::Initial>()) return "initial state: " + observedText(i->observed);
  if (const auto* f = op.as<ops::Final>()) {
    std::string pending = f->pending.empty() ? "" : fmt::format(", {} pending", f->pending.size());
    std::string dead = f->deadLetterWhere.empty()
                           ? ""
                           : fmt::format("; {}: {} dead letter{}", f->deadLetterWhere, f->deadLetters.size(),
                                         f->deadLetters.size() == 1 ? "" : "s");
    std::string outbox = f->outboxPending ? fmt::format("; outbox: {} unsent", *f->outboxPending) : "";
    return fmt::format("final state ({}): {}{}{}{}", ops::toString(f->end), observedText(f->observed), pending, dead,
                       outbox);
  }
  if (const auto* s = op.as<ops::Stall>())
    return "stall: " + (s->reason.empty() ? std::string("no progress") : s->reason) + (s->restart ? ", restarting" : "");
  if (const auto* r = op.as<ops::Request>()) {
    std::string key = !r->keyHeader ? "no key" : r->role == "bad-key" ? "malformed key " + json(r->keyValue).dump()
                                                                      : fmt::format("key {}", r->key);
    std::string how = r->wait == "answer" ? "" : " [" + r->wait + "]";
    std::string copy = r->burst ? fmt::format(" copy {}", r->burst) : "";
    return fmt::format("r{} → {}: {}, payload {} ({}{}){}", r->id, r->server, key, r->body, r->role, copy, how);
  }
  if (const auto* a = op.as<ops::Response>()) {
    std::string body = a->body.empty() ? "" : fmt::format(" body#{} {}", a->digest.substr(0, 8), cut(a->body, 40));
    std::string loc = a->location.empty() ? "" : " Location " + a->location;
    if (a->outcome == "answered") return fmt::format("r{} ← {}{}{}", a->id, a->status, loc, body);
    if (a->outcome == "late") return fmt::format("r{} ← {}{}{} (late: the client had given up)", a->id, a->status, loc, body);
    if (a->outcome == "cut")
      return fmt::format("r{} cut by the client{}", a->id, a->status ? fmt::format(" after the headers ({}{})", a->status, loc) : "");
    return fmt::format("r{}: {}", a->id, a->outcome == "refused" ? "connection refused (no server)" : "connection closed, no answer");
  }
  if (const auto* k = op.as<ops::Call>()) {
    auto ev = c.eventOfId.find(k->ref);
    std::string ref = ev != c.eventOfId.end() ? fmt::format("e{} ({})", ev->second, cut(k->ref, 8))
                      : k->ref.empty()        ? std::string("no ref")
                                              : "ref " + cut(k->ref, 8);
    std::string what = k->outcome == "executed"   ? fmt::format("executed #{}", k->execution)
                       : k->outcome == "replayed" ? fmt::format("replayed #{}", k->execution)
                                                  : k->outcome;
    std::string key = k->keyHeader ? " key " + cut(k->key, 16) : " no key";
    auto via = c.callVia.find(op.index);
    return fmt::format("sink: call {} {} {} {}{}{} → {} ({})", k->id, k->method, k->path, ref, key,
                       via == c.callVia.end() ? "" : " from " + via->second, what, k->status);
  }
  if (const auto* e = op.as<ops::Error>()) return "error: " + e->message;
  if (const auto* n = op.as<ops::Note>()) return "note: " + n->message;
  if (const auto* o = op.as<ops::Opaque>())
    return fmt::format("{} connection {} not decoded from byte {} ({}): {}", o->server, o->conn, o->offset, o->direction,
                       o->reason);
  if (const auto* s = op.as<ops::Step>()) {
    // The held step of a timed hold ends it: no note says so.
    const HoldSpan* h = c.releasedAt(op.index);
    return (h ? "▶ " : "") + describeStep(c, *s) + (h ? "  (hold " + h->releaseText() + ")" : "");
  }
  return op.type();
}

} // namespace idem::html::tl
