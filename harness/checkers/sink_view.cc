#include "checkers/sink_view.h"

#include "plan/fault_kind.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <set>

namespace idem::detail {

namespace {

constexpr int64_t kHeldToEnd = std::numeric_limits<int64_t>::max();

bool isCallStep(const ops::Step& s) { return s.server == "sink" && s.verb == "CALL" && !s.setUp; }

/// The value after `name=` in a step's detail, up to the next space ("" and false when it has none).
bool detailValue(const std::string& detail, const std::string& name, std::string& out) {
  const std::string tag = name + "=";
  size_t at = detail.rfind(" " + tag);
  if (at == std::string::npos) {
    if (detail.rfind(tag, 0) != 0) return false;
    at = 0;
  } else {
    at += 1;
  }
  at += tag.size();
  out = detail.substr(at, detail.find(' ', at) == std::string::npos ? std::string::npos : detail.find(' ', at) - at);
  return true;
}

/// A step of this outcome handed its request to the sink (an error fault after it: the request went on).
bool carried(const ops::Step& s) { return s.reachedServer() || s.outcome == ops::StepOutcome::Answered; }

} // namespace

void callDetail(const std::string& detail, std::string& ref, std::string& key, bool& keyed, bool& keyCut) {
  ref.clear();
  key.clear();
  detailValue(detail, "ref", ref);
  keyed = detailValue(detail, "key", key) && !key.empty();
  // A detail cut short ends in "..." right after its key= value: the key is a prefix of the one sent.
  keyCut = keyed && key.size() >= 3 && key.compare(key.size() - 3, 3, "...") == 0 && detail.size() >= key.size() &&
           detail.compare(detail.size() - key.size(), key.size(), key) == 0;
  if (keyCut) key.resize(key.size() - 3);
}

std::map<int64_t, int64_t> linkCalls(const std::vector<Op>& history) {
  struct Candidate {
    int64_t op, reqUs;
    std::string ref, key;
    bool keyed, keyCut, linked;
  };
  std::vector<Candidate> steps;
  for (const Op& op : history)
    if (const auto* st = op.as<ops::Step>(); st && isCallStep(*st) && carried(*st)) {
      Candidate c{op.index, st->tReqUs, "", "", false, false, false};
      callDetail(st->detail, c.ref, c.key, c.keyed, c.keyCut);
      steps.push_back(std::move(c));
    }
  std::map<int64_t, int64_t> out;
  for (const Op& op : history) {
    const auto* call = op.as<ops::Call>();
    if (!call) continue;
    // A step carried a call only if its request was complete before the sink decided. Of those, one whose
    // key is the call's before one that only shares its ref; then one recorded after the call (a step is
    // recorded when it ends), the first; else one that ended before the sink decided (a request held and
    // handed on after its client gave up on it), the last.
    Candidate* best = nullptr;
    auto rank = [&](const Candidate& c) {
      const bool key = c.keyed == call->keyHeader &&
                       (!c.keyed || c.key == call->key || (c.keyCut && call->key.rfind(c.key, 0) == 0));
      const bool after = c.op > op.index;
      return std::make_tuple(key, after, after ? -c.op : c.op);
    };
    for (auto& st : steps) {
      if (st.linked || st.ref != call->ref || st.reqUs > op.time_us) continue;
      if (!best || rank(st) > rank(*best)) best = &st;
    }
    if (!best) continue;
    best->linked = true;
    out[op.index] = best->op;
  }
  return out;
}

SinkView::SinkView(const HistoryView& hv) : h(hv) {
  for (const auto& s : h.sends) eventOf.emplace(s.event_id, s.n);
  for (const Op& op : h.ops) {
    if (const auto* st = op.as<ops::Step>(); st && isCallStep(*st)) {
      CallStep c;
      c.op = op.index;
      c.process = op.process;
      c.step = st;
      callDetail(st->detail, c.ref, c.key, c.keyed, c.keyCut);
      steps.push_back(std::move(c));
    } else if (const auto* call = op.as<ops::Call>()) {
      SinkCall c;
      c.op = op.index;
      c.call = call;
      calls.push_back(std::move(c));
    }
  }
  const auto links = linkCalls(h.ops);
  for (auto& c : calls) {
    auto it = links.find(c.op);
    if (it == links.end()) continue;
    c.stepOp = it->second;
    for (auto& st : steps)
      if (st.op == it->second) {
        st.callOp = c.op;
        c.process = st.process;
      }
  }
}

std::vector<const SinkCall*> SinkView::executions(const std::string& ref) const {
  std::vector<const SinkCall*> out;
  for (const auto& c : calls)
    if (c.call->executed() && c.call->ref == ref) out.push_back(&c);
  return out;
}

std::vector<const SinkCall*> SinkView::callsOf(const std::string& ref) const {
  std::vector<const SinkCall*> out;
  for (const auto& c : calls)
    if (c.call->ref == ref) out.push_back(&c);
  return out;
}

std::vector<const CallStep*> SinkView::stepsOf(const std::string& ref) const {
  std::vector<const CallStep*> out;
  for (const auto& s : steps)
    if (s.ref == ref) out.push_back(&s);
  return out;
}

const CallStep* SinkView::stepOfFault(const Fault& f, const std::string& process) const {
  int nth = 0;
  for (const auto& c : steps)
    if (f.process.empty() ? c.step->k == f.k : c.process == process && ++nth == f.k) return &c;
  return nullptr;
}

const SinkCall* SinkView::callAt(int64_t op) const {
  for (const auto& c : calls)
    if (c.op == op) return &c;
  return nullptr;
}

const CallStep* SinkView::stepAt(int64_t op) const {
  for (const auto& s : steps)
    if (s.op == op) return &s;
  return nullptr;
}

std::string SinkView::caller(const SinkCall& c) const {
  const CallStep* st = c.stepOp >= 0 ? stepAt(c.stepOp) : nullptr;
  return st ? caller(*st) : std::string("a caller");
}

std::string SinkView::caller(const CallStep& st) { return fmt::format("{} at {}", st.process, st.step->name()); }

std::vector<int64_t> SinkView::opsOf(const SinkCall& c) {
  std::vector<int64_t> ops;
  if (c.stepOp >= 0) ops.push_back(c.stepOp);
  ops.push_back(c.op);
  return ops;
}

std::string SinkView::idOf(int n) const {
  for (const auto& [id, m] : eventOf)
    if (m == n) return id;
  return "";
}

std::string SinkView::label(const std::string& ref) const {
  auto it = eventOf.find(ref);
  if (it == eventOf.end()) return fmt::format("ref '{}' (no event sent carries it)", ref);
  return fmt::format("event {} ({} '{}')", it->second, h.scenario.idField(), ref);
}

std::string callText(const ops::Call& c) {
  if (c.outcome == "executed") return fmt::format("call {}: executed, execution {}", c.id, c.execution);
  if (c.outcome == "replayed")
    return c.execution ? fmt::format("call {}: replayed execution {}", c.id, c.execution)
                       : fmt::format("call {}: replayed", c.id);
  return fmt::format("call {}: {}, {}", c.id, c.outcome, c.status);
}

Story sinkStory(const SinkView& s, const std::string& ref) {
  const HistoryView& h = s.h;
  Story st;
  std::vector<std::pair<int64_t, std::string>> items; // history order
  std::set<int64_t> told;
  // `at`: where it goes in the story (a call told where the sink decided it, before the fault at its reply).
  auto tell = [&](int64_t op, std::string text, int64_t at = -1) {
    if (!told.insert(op).second) return;
    items.emplace_back(at < 0 ? op : at, std::move(text));
    st.ops.push_back(op);
  };
  const auto it = s.eventOf.find(ref);
  const int n = it == s.eventOf.end() ? 0 : it->second;
  std::string sent;
  if (n) {
    auto sends = h.sendsOf(n);
    for (const SendRec* x : sends) {
      st.ops.push_back(x->op);
      st.entries.push_back(x->entry);
    }
    if (sends.size() > 1)
      sent = fmt::format("sent {} by the producer (entries {})", times(static_cast<int>(sends.size())),
                         listAnd(st.entries));
    // Deliveries, and what befell the process while it held the event: until it acknowledged the entry, the
    // entry was handed to it again, or its kill.
    std::set<std::string> seen;
    auto ds = h.deliveriesOf(n);
    for (size_t i = 0; i < ds.size(); ++i) {
      const DeliveryRec& d = *ds[i];
      std::string verb = i == 0 ? "delivered to" : seen.count(d.entry) ? "redelivered to"
                                                                        : fmt::format("delivered again (entry {}) to", d.entry);
      seen.insert(d.entry);
      tell(d.op, fmt::format("{} {} ({})", verb, d.process, d.label));
      int64_t until = kHeldToEnd;
      for (size_t j = i + 1; j < ds.size(); ++j)
        if (ds[j]->process == d.process && ds[j]->entry == d.entry) until = std::min(until, ds[j]->op);
      if (const AckRec* a = h.ackBy(d.process, d.entry, d.op, until)) until = a->op;
      if (const KillRec* k = h.killAfter(d.process, d.op); k && k->op < until) {
        tell(k->op, fmt::format("{} killed at {}", d.process, k->point));
        if (st.kill_point.empty()) st.kill_point = k->point;
        until = k->op;
      }
      for (const auto& f : h.otherFaults) {
        if (f.process != d.process || f.op <= d.op || f.op > until || f.fault.kind == "forget") continue;
        // A fault at a call of another event befell that event's work, not this one's, though the process
        // held this entry too (read in the same batch).
        const CallStep* at = f.fault.verb == "CALL" ? s.stepOfFault(f.fault, f.process) : nullptr;
        if (!at || at->ref.empty() || at->ref == ref) tell(f.op, faultKind(f.fault.kind, "fault").phrase(f.fault, f.process, serverTitle));
      }
    }
    // Its first acknowledgement.
    if (const auto acks = h.acksOf(n); !acks.empty()) {
      const AckRec& a = *acks.front();
      const auto* ack = h.ops[static_cast<size_t>(a.op)].as<ops::Step>();
      tell(a.op, fmt::format("acknowledged by {}{}", a.process, ack ? " (" + ack->name() + ")" : ""));
    }
  }
  bool called = false;
  // In the order the calls happened: a call's record is written as the sink decides, its step when the
  // answer reaches the caller (a held answer: much later).
  auto when = [&](const CallStep* c) { return c->callOp >= 0 ? std::min(c->callOp, c->op) : c->op; };
  auto calls = s.stepsOf(ref);
  std::stable_sort(calls.begin(), calls.end(), [&](const CallStep* a, const CallStep* b) { return when(a) < when(b); });
  for (const CallStep* c : calls) {
    const SinkCall* rec = c->callOp >= 0 ? s.callAt(c->callOp) : nullptr;
    std::string what = rec ? callText(*rec->call)
                       : c->step->outcome == ops::StepOutcome::Answered
                           ? fmt::format("answered {} in the sink's place", c->step->summary)
                       : carried(*c->step) ? "no call recorded by the sink"
                                           : fmt::format("never reached the sink: {}", ops::toString(c->step->outcome));
    tell(c->op, fmt::format("{} called{} at {} ({})", c->process, called ? " again" : "", c->step->name(), what),
         rec ? std::min(rec->op, c->op) : c->op);
    if (rec) st.ops.push_back(rec->op);
    called = true;
    // A fault at this very step of the caller (its kill, drop or error at CALL#k: recorded next to the step),
    // told even when the caller held no entry of the event (an outbox relay).
    if (const KillRec* k = h.killAfter(c->process, c->op); k && k->op <= c->op + 2) {
      tell(k->op, fmt::format("{} killed at {}", c->process, k->point));
      if (st.kill_point.empty()) st.kill_point = k->point;
    }
    for (const auto& f : h.otherFaults)
      if (f.process == c->process && f.fault.verb == "CALL" && f.op >= c->op - 2 && f.op <= c->op + 2)
        tell(f.op, faultKind(f.fault.kind, "fault").phrase(f.fault, f.process, serverTitle));
  }
  for (const SinkCall* c : s.callsOf(ref))
    if (c->stepOp < 0) tell(c->op, fmt::format("the sink received {}", callText(*c->call)));
  // Without a kill: the first other fault it tells (a drop, an error, a delay).
  if (st.kill_point.empty()) {
    for (const auto& f : h.otherFaults)
      if (told.count(f.op)) {
        st.kill_point = f.fault.str();
        break;
      }
  }
  std::sort(items.begin(), items.end());
  std::vector<std::string> parts;
  if (!sent.empty()) parts.push_back(sent);
  for (auto& [op, text] : items) parts.push_back(std::move(text));
  if (parts.empty()) parts.push_back(n && h.neverDelivered(n) ? "never delivered" : "no delivery of it was recorded");
  st.text = fmt::format("{}", fmt::join(parts, ", "));
  return st;
}

} // namespace idem::detail
