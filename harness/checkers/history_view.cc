#include "checkers/history_view.h"

#include "checkers/tx_statement.h"

#include "plan/fault_kind.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>

namespace idem::detail {

namespace {

void addSend(HistoryView& h, const Op& op, const ops::Send& send) {
  SendRec s;
  s.op = op.index;
  s.entry = send.entry;
  s.n = send.n;
  s.fields = send.fields;
  std::string id = h.scenario.idField();
  s.event_id = !send.eventId.empty() ? send.eventId : s.fields[id];
  if (!s.fields.count(id)) s.fields[id] = s.event_id;
  for (const auto& f : h.scenario.fields) {
    if (f.gen == "seq" && !s.fields.count(f.name)) s.fields[f.name] = std::to_string(s.n);
  }
  s.phase = send.phase;
  h.entryEvent[s.entry] = s.n;
  h.eventFields.emplace(s.n, s.fields);
  h.sends.push_back(std::move(s));
}

void addStep(HistoryView& h, const Op& op, const ops::Step& step) {
  StepRec st{op.index, op.process, step.verb, step.detail};
  // Entries reached the process only with a reply it got.
  if (step.replied() && !step.error) {
    for (const auto& d : step.delivered) {
      DeliveryRec rec{op.index, op.process, step.name(), d.entry, 0};
      auto it = h.entryEvent.find(rec.entry);
      if (it != h.entryEvent.end()) rec.n = it->second;
      h.deliveries.push_back(std::move(rec));
    }
  }
  // An XACK took effect when the server executed it: its reply came, or it was withheld after the server
  // had it (killed or dropped after, forwarded before a cut). What a step hands back is handed back by an
  // error answer as well: a nack has none of its own, and a closed channel requeues what it held.
  // A delivery that settles itself (a no-ack push) is settled once the broker sent it, whether or not the
  // process ever read it (killed before the push reached it).
  const bool settlesItself = !step.acked.empty() && std::all_of(step.acked.begin(), step.acked.end(),
                                                                [&](const std::string& a) { return step.delivers(a); });
  if (step.reachedServer() || (settlesItself && !step.error)) {
    if (!step.error)
      for (const auto& a : step.acked) h.acks.push_back({op.index, op.process, a});
    for (const auto& r : step.returned) h.returns.push_back({op.index, op.process, r});
  }
  if (step.unseen && step.reachedServer()) h.unseenSteps++;
  if (step.unseenEntries) h.unseenReads++;
  h.steps.push_back(std::move(st));
}

/// HistoryView::scriptAcks: the scripts whose bodies the run showed, by SHA-1, then the steps that ran one
/// calling XACK.
void addScriptAcks(HistoryView& h) {
  std::map<std::string, bool> acks; // SHA-1 -> its body calls XACK
  for (const Op& op : h.ops)
    if (const auto* s = op.as<ops::Step>(); s && !s->script.empty() && !s->scriptCalls.empty())
      acks[s->script] = acks[s->script] ||
                        std::find(s->scriptCalls.begin(), s->scriptCalls.end(), "XACK") != s->scriptCalls.end();
  if (acks.empty()) return;
  for (const Op& op : h.ops) {
    const auto* s = op.as<ops::Step>();
    if (!s || !s->unseen || s->scriptIds.empty() || s->error || !s->reachedServer()) continue;
    if (auto it = acks.find(s->script); it != acks.end() && it->second)
      for (const auto& id : s->scriptIds) h.scriptAcks.push_back({op.index, op.process, id});
  }
}

/// HistoryView::deletedConsumers: each XGROUP DELCONSUMER that deleted pending entries, and what they were.
void addDeletedConsumers(HistoryView& h) {
  std::map<std::string, std::string> names; // process -> its consumer name (its spawn's)
  for (const Op& op : h.ops)
    if (const auto* sp = op.as<ops::Spawn>(); sp && !sp->consumer.empty()) names[op.process] = sp->consumer;
  auto nameOf = [&](const std::string& process) {
    auto it = names.find(process);
    return it == names.end() ? std::string() : it->second;
  };
  const size_t seen = h.acks.size();
  for (const Op& op : h.ops) {
    const auto* s = op.as<ops::Step>();
    int pending = 0; // the count of pending entries it deleted, from its reply: "(integer) 2"
    if (!s || s->deletesConsumer.empty() || !s->replied() || s->error ||
        std::sscanf(s->summary.c_str(), "(integer) %d", &pending) != 1 || pending <= 0)
      continue;
    HistoryView::DeletedConsumer del{op.index, op.process, s->deletesConsumer,
                                     nameOf(op.process) == s->deletesConsumer, pending, {}};
    for (const auto& d : h.deliveries) {
      if (d.op > op.index || nameOf(d.process) != del.consumer ||
          std::find(del.entries.begin(), del.entries.end(), d.entry) != del.entries.end())
        continue;
      const bool settled = std::any_of(h.acks.begin(), h.acks.end(), [&](const AckRec& a) {
        return a.entry == d.entry && a.op > d.op && a.op < op.index;
      });
      const bool handedOn = std::any_of(h.deliveries.begin(), h.deliveries.end(), [&](const DeliveryRec& o) {
        return o.entry == d.entry && o.op > d.op && o.op < op.index && nameOf(o.process) != del.consumer;
      });
      if (!settled && !handedOn) del.entries.push_back(d.entry);
    }
    if (del.entries.empty() || static_cast<int>(del.entries.size()) > pending) continue; // not what it deleted
    for (const auto& e : del.entries) h.acks.push_back({op.index, op.process, e});
    h.deletedConsumers.push_back(std::move(del));
  }
  if (h.acks.size() > seen) // in history order, as the steps' own
    std::stable_sort(h.acks.begin(), h.acks.end(), [](const AckRec& a, const AckRec& b) { return a.op < b.op; });
}

/// A JUSTID claim hands its claimant ids, not entries: the claimant gets an entry by reading it outside the
/// group (XRANGE or XREVRANGE of its id), and that read is its delivery: the first such read of each entry it
/// claimed and was not handed since, by the same process.
void addRangedDeliveries(HistoryView& h) {
  std::map<std::string, std::set<std::string>> claimed; // process -> ids claimed, not handed over yet
  const size_t seen = h.deliveries.size();
  for (const Op& op : h.ops) {
    if (op.as<ops::Exit>()) claimed.erase(op.process);
    const auto* step = op.as<ops::Step>();
    if (!step || !step->replied() || step->error) continue;
    auto& mine = claimed[op.process];
    for (const auto& d : step->delivered) mine.erase(d.entry);
    for (const auto& id : step->ranged) {
      if (!mine.erase(id)) continue;
      auto it = h.entryEvent.find(id);
      h.deliveries.push_back({op.index, op.process, step->name(), id, it == h.entryEvent.end() ? 0 : it->second});
    }
    mine.insert(step->claimedIds.begin(), step->claimedIds.end());
  }
  if (h.deliveries.size() > seen) // in history order, as the reads' own
    std::stable_sort(h.deliveries.begin(), h.deliveries.end(),
                     [](const DeliveryRec& a, const DeliveryRec& b) { return a.op < b.op; });
}

} // namespace

HistoryView::HistoryView(const Scenario& s, const std::vector<Op>& o) : scenario(s), ops(o) {
  for (const Op& op : ops) {
    if (auto* p = op.as<ops::Plan>(); p && !plan) plan = p;
    else if (auto* i = op.as<ops::Initial>()) initial = i;
    else if (auto* f = op.as<ops::Final>()) final = f;
    else if (auto* e = op.as<ops::Error>()) errors.push_back(e->message);
    else if (auto* send = op.as<ops::Send>()) addSend(*this, op, *send);
    else if (auto* step = op.as<ops::Step>()) addStep(*this, op, *step);
    else if (auto* spawn = op.as<ops::Spawn>()) logs[op.process] = spawn->log;
    else if (auto* o2 = op.as<ops::Opaque>())
      opaque.emplace_back(&op, o2);
    // A kill at a step, or at a time (timekill): every fault whose effect is SIGKILL.
    else if (auto* fault = op.as<ops::FaultOp>();
             fault && faultKind(fault->fault.kind, "fault").effect(fault->fault).action == Effect::Action::Kill)
      kills.push_back({op.index, op.process, fault->fault.str(), fault->signal ? fault->signal : 9});
    else if (fault) {
      otherFaults.push_back({op.index, op.process, fault->fault});
      if (fault->aged) ages.push_back({op.index, fault->fault.str(), *fault->aged});
      // The consumer may redo what it holds: a lost reply (drop after), its own timeout (delay), a restart.
      if (applicationWeight(fault->fault) > 1) retryFaults++;
    }
    else if (auto* exit = op.as<ops::Exit>())
      exits.push_back({op.index, op.process, exit->status, exit->signal, exit->by});
  }
  addScriptAcks(*this);
  addRangedDeliveries(*this);
  // A read recorded before the producer's send op (possible when ops race) still names its event.
  for (auto& d : deliveries) {
    if (d.n == 0 && entryEvent.count(d.entry)) d.n = entryEvent[d.entry];
  }
  addDeletedConsumers(*this);
}

RunEnd HistoryView::end() const { return requireFinal().end; }

std::string HistoryView::endReason() const { return requireFinal().reason; }

HistoryView::LateRetries HistoryView::lateRetries(int n) const {
  LateRetries out;
  const auto sent = sendsOf(n);
  if (sent.size() < 2 || ages.empty()) return out;
  const auto got = deliveriesOf(n);
  // The state ages from when a consumer could first have marked the event: its first delivery.
  const int64_t marked = got.empty() ? sent.front()->op : got.front()->op;
  for (const auto& a : ages) {
    if (a.op <= marked) continue;
    out.ageMs += a.aged.ms;
    out.removed = out.removed || a.aged.expired > 0 || a.aged.pruned > 0;
    out.ops.push_back(a.op);
  }
  if (out.ageMs == 0) return out; // no time passed for its state: its retries are ordinary ones
  // A retry's own age counts from the producer's first send of the event: the window is the producer's.
  for (size_t i = 1; i < sent.size(); ++i) {
    int64_t ms = 0;
    for (const auto& a : ages)
      if (a.op > sent.front()->op && a.op < sent[i]->op) ms += a.aged.ms;
    const bool inWindow = !scenario.retryWindowMs || ms <= *scenario.retryWindowMs;
    (inWindow ? out.within : out.after)++;
    out.sentAtMs = std::max(out.sentAtMs, ms);
    out.ops.push_back(sent[i]->op);
  }
  return out;
}

int HistoryView::cap(int n) const { return opportunities(n) + retryFaults + unseenReads; }

const ops::Final& HistoryView::requireFinal() const {
  if (!final) throw std::runtime_error("no final op: the run did not reach its final read");
  return *final;
}

const ops::Initial& HistoryView::requireInitial() const {
  if (!initial) throw std::runtime_error("no initial op: the initial state was not read");
  return *initial;
}

const ops::Plan& HistoryView::requirePlan() const {
  if (!plan) throw std::runtime_error("no plan op: the schedule that ran is not known");
  return *plan;
}

std::vector<const SendRec*> HistoryView::sendsOf(int n) const {
  std::vector<const SendRec*> out;
  for (const auto& s : sends) {
    if (s.n == n) out.push_back(&s);
  }
  return out;
}

std::vector<const DeliveryRec*> HistoryView::deliveriesOf(int n) const {
  std::vector<const DeliveryRec*> out;
  for (const auto& d : deliveries) {
    if (d.n == n) out.push_back(&d);
  }
  return out;
}

const AckRec* HistoryView::ackBy(const std::string& process, const std::string& entry, int64_t after,
                                 int64_t before) const {
  for (const auto& a : acks) {
    if (a.process == process && a.entry == entry && a.op > after && a.op < before) return &a;
  }
  return nullptr;
}

const KillRec* HistoryView::killAfter(const std::string& process, int64_t after) const {
  for (const auto& k : kills) {
    if (k.process == process && k.op > after) return &k;
  }
  return nullptr;
}

std::vector<const AckRec*> HistoryView::acksOf(int n) const { return ofEvent(acks, n); }

std::vector<const AckRec*> HistoryView::scriptAcksOf(int n) const { return ofEvent(scriptAcks, n); }

std::vector<const AckRec*> HistoryView::ofEvent(const std::vector<AckRec>& recs, int n) const {
  std::vector<const AckRec*> out;
  for (const auto& a : recs) {
    auto it = entryEvent.find(a.entry);
    if (it != entryEvent.end() && it->second == n) out.push_back(&a);
  }
  return out;
}

bool HistoryView::acked(int n) const {
  if (!acksOf(n).empty() || settledUnseen(n)) return true;
  // Steps that may settle entries unseen (a script that acknowledges): an entry the group delivered that the
  // broker no longer lists pending at the end was acknowledged, by one of them.
  if (unseenSteps == 0 || !final || deliveriesOf(n).empty()) return false;
  const auto sent = sendsOf(n);
  return std::none_of(sent.begin(), sent.end(), [&](const SendRec* s) {
    return std::any_of(final->pending.begin(), final->pending.end(), [&](const auto& p) { return p.entry == s->entry; });
  });
}

bool HistoryView::settledUnseen(int n) const { return !settledUnseenEntry(n).empty(); }

std::string HistoryView::settledUnseenEntry(int n) const {
  if (!final) return "";
  const auto& gone = final->settledUnseen;
  for (const SendRec* s : sendsOf(n))
    if (std::find(gone.begin(), gone.end(), s->entry) != gone.end()) return s->entry;
  return "";
}

const KillRec* HistoryView::settledUnseenKill() const {
  const bool otherCut = std::any_of(otherFaults.begin(), otherFaults.end(), [](const FaultRec& f) {
    return f.fault.kind == "drop" || f.fault.kind == "error" || f.fault.kind == "restart";
  });
  return kills.size() == 1 && !otherCut ? &kills.front() : nullptr;
}

namespace {

/// A PostgreSQL step that cannot have applied an event: it never reached the server (withheld, refused), it
/// only opens or abandons a transaction, or it is a COMMIT answered ROLLBACK (the transaction had failed). A
/// step named by its first statement (a simple query of several statements, a pipelined group) that names
/// a table does more than that: "BEGIN; INSERT …; COMMIT" applies.
bool appliesAnything(const ops::Step& s) {
  if (!s.reachedServer()) return false;
  if (!s.tables.empty()) return true;
  using K = TxStatement::Kind;
  const K k = txStatement(s).kind;
  if (k == K::Begin || k == K::Rollback || k == K::RollbackTo) return false;
  return !failedCommit(s);
}

/// A plain BEGIN (START TRANSACTION) or a plain ROLLBACK (ABORT), alone in its step and naming no table.
bool plain(const ops::Step& s, TxStatement::Kind kind) {
  return txStatement(s).kind == kind && s.tables.empty() && oneStatement(s);
}

} // namespace

bool HistoryView::undone(int64_t at) const {
  using K = TxStatement::Kind;
  const Op& self = ops[static_cast<size_t>(at)];
  const auto* w = self.as<ops::Step>();
  if (!w || w->server != "pg" || !oneStatement(*w)) return false;
  if (txStatement(*w).kind != K::Other) return false; // a transaction statement is no work of its own
  const auto sameConn = [&](const Op& op) -> const ops::Step* {
    if (op.process != self.process) return nullptr;
    const auto* s = op.as<ops::Step>();
    return s && s->server == "pg" && s->conn == w->conn ? s : nullptr;
  };
  const auto lifeEnds = [&](const Op& op) {
    return op.process == self.process && (op.as<ops::Exit>() || op.as<ops::Spawn>());
  };
  const auto undecoded = [&](const Op& op) {
    const auto* o = op.as<ops::Opaque>();
    return op.process == self.process && o && o->server == "pg" && o->conn == w->conn;
  };
  // Inside a transaction this connection opened: a plain BEGIN before it, and nothing since that could end it.
  bool inside = false;
  for (int64_t i = at - 1; i >= 0 && !inside; --i) {
    const Op& op = ops[static_cast<size_t>(i)];
    if (lifeEnds(op) || undecoded(op)) return false;
    const auto* s = sameConn(op);
    if (!s || !s->reachedServer()) continue;
    const K k = txStatement(*s).kind;
    if (plain(*s, K::Begin)) inside = true;
    else if (!oneStatement(*s) || (k != K::Other && k != K::Savepoint && k != K::Release)) return false;
  }
  if (!inside) return false;
  // ... and that transaction never committed: it was rolled back, its COMMIT was answered ROLLBACK (it had
  // failed), or the connection's process went on to its end with no COMMIT sent on it.
  for (size_t i = static_cast<size_t>(at) + 1; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (lifeEnds(op)) return true;
    if (undecoded(op)) return false;
    const auto* s = sameConn(op);
    if (!s) continue;
    if (!s->reachedServer()) continue; // never reached the server (a COMMIT too): the transaction is still open
    if (plain(*s, K::Rollback)) return true;
    const K k = txStatement(*s).kind;
    if (k == K::Commit) return failedCommit(*s);
    if (!oneStatement(*s) || (k != K::Other && k != K::Savepoint && k != K::Release))
      return false; // something that may end it some other way (ROLLBACK TO, PREPARE TRANSACTION): not decided here
  }
  return true; // the history ended with it open: the run's end stopped the process
}

bool HistoryView::returnedUntouched(const DeliveryRec& d) const {
  const auto* read = ops[static_cast<size_t>(d.op)].as<ops::Step>();
  if (!read) return false;
  // The window ends where the process handed the entry back, or where its life ended (the broker hands what
  // it held to another consumer): whichever comes first.
  int64_t end = -1;
  for (size_t i = static_cast<size_t>(d.op) + 1; i < ops.size() && end < 0; ++i) {
    const Op& op = ops[i];
    if (op.process != d.process) continue;
    if (op.as<ops::Exit>() || op.as<ops::Spawn>()) end = static_cast<int64_t>(i);
    else if (const auto* s = op.as<ops::Step>();
             s && std::find(s->returned.begin(), s->returned.end(), d.entry) != s->returned.end())
      end = static_cast<int64_t>(i);
  }
  if (end < 0) return false;
  // Work for this delivery is a request its process sent inside the window. A step is recorded when its
  // reply comes, so a request sent before the delivery (a COMMIT whose reply a restart held) can be recorded
  // inside the window, and one sent inside it can be recorded after its end.
  const int64_t from = ops[static_cast<size_t>(d.op)].time_us, to = ops[static_cast<size_t>(end)].time_us;
  for (size_t i = static_cast<size_t>(d.op) + 1; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.process != d.process) continue;
    const bool inside = static_cast<int64_t>(i) < end;
    const auto* s = op.as<ops::Step>();
    if (!s) {
      if (!inside) continue;
      // A fault that fired (a kill too: what it cut short is a step of its own), a note, a stall: no work.
      if (op.as<ops::FaultOp>() || op.as<ops::Note>() || op.as<ops::Stall>()) continue;
      return false; // a call to the sink, bytes the proxy could not decode, …: it may have been work
    }
    if (s->server == read->server) continue;
    const bool sentBefore = s->tReqUs > 0 && s->tReqUs < from;
    const bool sentAfter = !inside && (s->tReqUs == 0 || s->tReqUs > to);
    if (sentBefore || sentAfter) continue;
    if (s->server == "pg" && (!appliesAnything(*s) || undone(static_cast<int64_t>(i)))) continue;
    return false; // work elsewhere: it may have been this delivery's
  }
  return true;
}

int HistoryView::opportunities(int n) const {
  int total = 0;
  for (const SendRec* s : sendsOf(n)) {
    int recorded = static_cast<int>(std::count_if(deliveries.begin(), deliveries.end(), [&](const DeliveryRec& d) {
      return d.entry == s->entry && !returnedUntouched(d);
    }));
    bool ackedEntry = std::any_of(acks.begin(), acks.end(), [&](const AckRec& a) { return a.entry == s->entry; });
    int broker = 0;
    if (final) {
      for (const auto& p : final->pending)
        if (p.entry == s->entry) broker = std::max(broker, p.deliveries);
    }
    total += std::max({recorded, broker, ackedEntry ? 1 : 0});
  }
  return total;
}

bool HistoryView::neverDelivered(int n) const {
  if (!final) return false;
  const auto& und = final->undelivered;
  auto mine = sendsOf(n);
  if (mine.empty()) return false;
  return std::all_of(mine.begin(), mine.end(), [&](const SendRec* s) {
    return std::find(und.begin(), und.end(), s->entry) != und.end();
  });
}

std::vector<HistoryView::HeldRedelivery> HistoryView::redeliveredWhileHeld(int n) const {
  auto within = [](int64_t op, int64_t from, int64_t to) { return op > from && op < to; };
  // Whether process p still held `entry` from op `from` until op `to`, with no fault on it in between.
  auto held = [&](const std::string& p, const std::string& entry, int64_t from, int64_t to) {
    const KillRec* k = killAfter(p, from);
    return !(k && k->op < to) && !ackBy(p, entry, from, to) &&
           std::none_of(exits.begin(), exits.end(), [&](const ExitRec& e) { return e.process == p && within(e.op, from, to); }) &&
           std::none_of(returns.begin(), returns.end(), [&](const AckRec& r) {
             return r.process == p && r.entry == entry && within(r.op, from, to);
           }) &&
           std::none_of(otherFaults.begin(), otherFaults.end(),
                        [&](const FaultRec& f) { return f.process == p && within(f.op, from, to); });
  };
  std::vector<HeldRedelivery> out;
  const auto got = deliveriesOf(n);
  for (size_t j = 1; j < got.size(); ++j)
    for (size_t i = 0; i < j; ++i)
      if (got[i]->entry == got[j]->entry && held(got[i]->process, got[i]->entry, got[i]->op, got[j]->op)) {
        out.push_back({got[j], got[i]->process});
        break;
      }
  return out;
}

std::set<int> HistoryView::inProgressAtDeath() const {
  std::vector<std::pair<std::string, int64_t>> deaths; // process, op index
  for (const auto& k : kills) deaths.emplace_back(k.process, k.op);
  for (const auto& e : exits) {
    if (e.by == "self" && (e.signal || e.status.value_or(0) != 0)) deaths.emplace_back(e.process, e.op);
  }
  std::set<int> out;
  for (const auto& [proc, at] : deaths) {
    std::vector<const DeliveryRec*> open; // delivered to proc before its death, not acked by it before
    for (const auto& d : deliveries) {
      if (d.process == proc && d.op < at && d.n != 0 && !ackBy(proc, d.entry, d.op, at)) open.push_back(&d);
    }
    if (open.empty()) continue;
    int64_t lastAck = -1;
    for (const auto& a : acks) {
      if (a.process == proc && a.op < at) lastAck = std::max(lastAck, a.op);
    }
    std::set<int> mentioned;
    std::string idField = scenario.idField();
    for (const auto& st : steps) {
      if (st.process != proc || st.op <= lastAck || st.op > at || st.detail.empty()) continue;
      for (const DeliveryRec* d : open) {
        auto f = eventFields.find(d->n);
        if (f == eventFields.end()) continue;
        auto id = f->second.find(idField);
        if (id != f->second.end() && !id->second.empty() && st.detail.find(id->second) != std::string::npos)
          mentioned.insert(d->n);
      }
    }
    if (!mentioned.empty()) out.insert(mentioned.begin(), mentioned.end());
    else out.insert(open.front()->n);
  }
  return out;
}

} // namespace idem::detail
