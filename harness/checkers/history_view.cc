#include "checkers/history_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace idem::detail {

namespace {

using nlohmann::json;

std::string text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::map<std::string, std::string> textFields(const json& j) {
  std::map<std::string, std::string> out;
  if (j.is_null()) return out;
  if (!j.is_object()) throw std::runtime_error("fields is not an object");
  for (auto it = j.begin(); it != j.end(); ++it) out[it.key()] = text(it.value());
  return out;
}

void parseSend(HistoryView& h, const Op& op) {
  SendRec s;
  s.op = op.index;
  s.entry = op.value.at("entry").get<std::string>();
  s.n = op.value.at("n").get<int>();
  s.fields = textFields(op.value.value("fields", json()));
  std::string id = h.scenario.idField();
  s.event_id = op.value.contains("event_id") ? op.value["event_id"].get<std::string>() : s.fields[id];
  if (!s.fields.count(id)) s.fields[id] = s.event_id;
  for (const auto& f : h.scenario.fields) {
    if (f.gen == "seq" && !s.fields.count(f.name)) s.fields[f.name] = std::to_string(s.n);
  }
  s.phase = op.value.value("phase", 1);
  h.entryEvent[s.entry] = s.n;
  h.eventFields.emplace(s.n, s.fields);
  h.sends.push_back(std::move(s));
}

void parseStep(HistoryView& h, const Op& op) {
  const json& v = op.value;
  StepRec st{op.index, op.process, v.value("verb", ""), v.value("detail", "")};
  std::string outcome = v.value("outcome", "ok");
  bool error = v.value("error", false);
  std::string label = v.contains("k") ? fmt::format("{}#{}", st.verb, v["k"].get<int64_t>()) : st.verb;
  if (v.contains("delivered") && outcome == "ok" && !error) {
    for (const auto& d : v["delivered"]) {
      DeliveryRec rec{op.index, op.process, label, d.at("entry").get<std::string>(), 0};
      auto it = h.entryEvent.find(rec.entry);
      if (it != h.entryEvent.end()) rec.n = it->second;
      h.deliveries.push_back(std::move(rec));
    }
  }
  // An XACK took effect when the server executed it: its reply came (ok), or it was withheld after the
  // server had it (killed-after, forwarded).
  if (v.contains("acked") && (outcome == "ok" || outcome == "killed-after" || outcome == "forwarded") && !error) {
    for (const auto& a : v["acked"]) h.acks.push_back({op.index, op.process, a.get<std::string>()});
  }
  h.steps.push_back(std::move(st));
}

} // namespace

HistoryView::HistoryView(const Scenario& s, const std::vector<Op>& o) : scenario(s), ops(o) {
  for (const Op& op : ops) {
    try {
      if (op.type == "plan" && !planOp) planOp = &op;
      else if (op.type == "initial") initialOp = &op;
      else if (op.type == "final") finalOp = &op;
      else if (op.type == "error") errors.push_back(op.value.value("message", op.value.dump()));
      else if (op.type == "send") parseSend(*this, op);
      else if (op.type == "step") parseStep(*this, op);
      else if (op.type == "spawn") logs[op.process] = op.value.value("log", "");
      else if (op.type == "opaque")
        opaque.push_back({op.index, op.process, op.value.at("server").get<std::string>(), op.value.value("conn", 0),
                          op.value.value("direction", ""), op.value.value("offset", uint64_t{0}),
                          op.value.value("reason", "")});
      else if (op.type == "kill")
        kills.push_back({op.index, op.process, op.value.at("point").get<std::string>(), op.value.value("signal", 9)});
      else if (op.type == "exit") {
        ExitRec e{op.index, op.process, std::nullopt, std::nullopt, op.value.value("by", "")};
        if (op.value.contains("status") && !op.value["status"].is_null()) e.status = op.value["status"].get<int>();
        if (op.value.contains("signal") && !op.value["signal"].is_null()) e.signal = op.value["signal"].get<int>();
        exits.push_back(e);
      }
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("op {} ({}): {}", op.index, op.type, e.what()));
    }
  }
  // A read recorded before the producer's send op (possible when ops race) still names its event.
  for (auto& d : deliveries) {
    if (d.n == 0 && entryEvent.count(d.entry)) d.n = entryEvent[d.entry];
  }
}

const Op& HistoryView::requireFinal() const {
  if (!finalOp) throw std::runtime_error("no final op: the run did not reach its final read");
  return *finalOp;
}

RunEnd HistoryView::end() const {
  const auto& fin = requireFinal().value;
  std::string e = fin.value("end", "");
  if (e == "settled") return RunEnd::Settled;
  if (e == "stuck") return RunEnd::Stuck;
  if (e == "limit") return RunEnd::Limit;
  if (!e.empty()) throw std::runtime_error(fmt::format("the final op's end '{}' is not settled, stuck or limit", e));
  // Histories written before "end" existed: a deadline is a limit; entries left otherwise mean stuck.
  if (fin.value("deadline", false)) return RunEnd::Limit;
  bool left = (fin.contains("pending") && !fin["pending"].empty()) ||
              (fin.contains("undelivered") && !fin["undelivered"].empty());
  return left ? RunEnd::Stuck : RunEnd::Settled;
}

std::string HistoryView::endReason() const {
  const auto& fin = requireFinal().value;
  if (fin.contains("reason") && fin["reason"].is_string()) return fin["reason"].get<std::string>();
  return end() == RunEnd::Limit ? "the run hit its deadline" : "";
}

int HistoryView::cap(int n) const { return opportunities(n); }

const Op& HistoryView::requireInitial() const {
  if (!initialOp) throw std::runtime_error("no initial op: the initial state was not read");
  return *initialOp;
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

bool HistoryView::acked(int n) const {
  return std::any_of(acks.begin(), acks.end(), [&](const AckRec& a) {
    auto it = entryEvent.find(a.entry);
    return it != entryEvent.end() && it->second == n;
  });
}

int HistoryView::opportunities(int n) const {
  int total = 0;
  for (const SendRec* s : sendsOf(n)) {
    int recorded = static_cast<int>(std::count_if(deliveries.begin(), deliveries.end(),
                                                  [&](const DeliveryRec& d) { return d.entry == s->entry; }));
    bool ackedEntry = std::any_of(acks.begin(), acks.end(), [&](const AckRec& a) { return a.entry == s->entry; });
    int broker = 0;
    if (finalOp && finalOp->value.contains("pending")) {
      for (const auto& p : finalOp->value["pending"]) {
        if (p.value("entry", "") == s->entry) broker = std::max(broker, p.value("deliveries", 0));
      }
    }
    total += std::max({recorded, broker, ackedEntry ? 1 : 0});
  }
  return total;
}

bool HistoryView::neverDelivered(int n) const {
  if (!finalOp || !finalOp->value.contains("undelivered")) return false;
  const auto& und = finalOp->value["undelivered"];
  auto mine = sendsOf(n);
  if (mine.empty()) return false;
  return std::all_of(mine.begin(), mine.end(), [&](const SendRec* s) {
    return std::any_of(und.begin(), und.end(), [&](const nlohmann::json& e) { return e.is_string() && e == s->entry; });
  });
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
