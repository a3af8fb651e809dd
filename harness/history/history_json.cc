/// The one JSON mapping of each record, each way. Reading is strict: a member a record needs that is
/// missing or of the wrong type is an error naming the op and the member, never a default.
#include "history/history.h"

#include <fmt/format.h>

#include <array>
#include <stdexcept>
#include <utility>

namespace idem {

using nlohmann::json;

namespace {

/// Reads the members of one op's value, naming the op in every error.
class In {
public:
  In(const json& v, std::string where) : v_(v), where_(std::move(where)) {
    if (!v_.is_object()) fail("value", "is not an object");
  }
  [[noreturn]] void fail(const std::string& member, const std::string& why) const {
    throw std::runtime_error(fmt::format("{}: '{}' {}", where_, member, why));
  }
  bool has(const char* k) const { return v_.contains(k) && !v_[k].is_null(); }
  const json& at(const char* k) const {
    if (!v_.contains(k)) fail(k, "is missing");
    return v_[k];
  }
  std::string str(const char* k) const {
    const json& x = at(k);
    if (!x.is_string()) fail(k, "is not a string");
    return x.get<std::string>();
  }
  std::string str(const char* k, const std::string& dflt) const { return has(k) ? str(k) : dflt; }
  int64_t integer(const char* k) const {
    const json& x = at(k);
    if (!x.is_number_integer()) fail(k, "is not an integer");
    return x.get<int64_t>();
  }
  int64_t integer(const char* k, int64_t dflt) const { return has(k) ? integer(k) : dflt; }
  /// The enum value `text` names in `table`; else fails on `k` with "'text' is not <expected>".
  template <class E, size_t N>
  E named(const char* k, const std::string& text, const std::pair<E, const char*> (&table)[N],
          const char* expected) const {
    for (const auto& [e, name] : table)
      if (text == name) return e;
    fail(k, fmt::format("'{}' is not {}", text, expected));
  }
  bool flag(const char* k) const {
    if (!has(k)) return false;
    if (!v_[k].is_boolean()) fail(k, "is not a boolean");
    return v_[k].get<bool>();
  }
  std::vector<std::string> strings(const char* k) const {
    std::vector<std::string> out;
    if (!has(k)) return out;
    if (!v_[k].is_array()) fail(k, "is not an array");
    for (const auto& x : v_[k]) {
      if (!x.is_string()) fail(k, "holds a value that is not a string");
      out.push_back(x.get<std::string>());
    }
    return out;
  }
  std::map<std::string, std::string> fields(const json& f, const char* k) const {
    std::map<std::string, std::string> out;
    if (f.is_null()) return out;
    if (!f.is_object()) fail(k, "is not an object");
    for (auto it = f.begin(); it != f.end(); ++it) out[it.key()] = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
    return out;
  }
  Observed observed(const char* k) const {
    const json& o = at(k);
    if (!o.is_object()) fail(k, "is not an object");
    Observed out;
    for (auto it = o.begin(); it != o.end(); ++it) {
      if (!it.value().is_array()) fail(fmt::format("{}.{}", k, it.key()), "is not an array of rows");
      Rows rows;
      for (const auto& r : it.value()) {
        if (!r.is_array()) fail(fmt::format("{}.{}", k, it.key()), "holds a row that is not an array");
        Row row;
        for (const auto& c : r) {
          if (c.is_null()) row.push_back(std::nullopt);
          else row.push_back(c.is_string() ? c.get<std::string>() : c.dump());
        }
        rows.push_back(std::move(row));
      }
      out[it.key()] = std::move(rows);
    }
    return out;
  }

private:
  const json& v_;
  std::string where_;
};

json observedJson(const Observed& o) {
  json j = json::object();
  for (const auto& [name, rows] : o) {
    json rs = json::array();
    for (const auto& r : rows) {
      json row = json::array();
      for (const auto& c : r) row.push_back(c ? json(*c) : json());
      rs.push_back(std::move(row));
    }
    j[name] = std::move(rs);
  }
  return j;
}

const std::pair<ops::StepOutcome, const char*> kOutcomes[] = {
    {ops::StepOutcome::Ok, "ok"},
    {ops::StepOutcome::KilledBefore, "killed-before"},
    {ops::StepOutcome::KilledAfter, "killed-after"},
    {ops::StepOutcome::Forwarded, "forwarded"},
    {ops::StepOutcome::Withheld, "withheld"},
    {ops::StepOutcome::Unobserved, "unobserved"},
    {ops::StepOutcome::DroppedBefore, "dropped-before"},
    {ops::StepOutcome::DroppedAfter, "dropped-after"},
    {ops::StepOutcome::Answered, "answered"},
};

const std::pair<ops::RunEnd, const char*> kEnds[] = {
    {ops::RunEnd::Settled, "settled"}, {ops::RunEnd::Stuck, "stuck"}, {ops::RunEnd::Limit, "limit"}};

// ---- each record: to JSON, from JSON ----

json valueOf(const ops::Plan& p) {
  json j{{"schedule", p.schedule}, {"target", p.target}, {"claim_idle_ms", p.claimIdleMs}, {"stream", p.stream},
         {"group", p.group}};
  if (!p.sinkPolicy.empty()) j["sink_policy"] = p.sinkPolicy;
  if (p.claimIdleRedelivers) j["claim_idle_redelivers"] = true;
  return j;
}
ops::Plan planOf(const In& in, const json& v, const std::string& where) {
  ops::Plan p;
  p.schedule = scheduleFromJson(in.at("schedule"), where + ": 'schedule'");
  p.target = in.str("target", "");
  p.claimIdleMs = static_cast<int>(in.integer("claim_idle_ms", 0));
  p.stream = in.str("stream", "");
  p.group = in.str("group", "");
  p.sinkPolicy = in.str("sink_policy", "");
  p.claimIdleRedelivers = in.flag("claim_idle_redelivers");
  (void)v;
  return p;
}

json valueOf(const ops::Initial& i) { return {{"observed", observedJson(i.observed)}}; }

json valueOf(const ops::Send& s) {
  json v{{"entry", s.entry}, {"n", s.n},         {"event_id", s.eventId},
         {"fields", s.fields}, {"phase", s.phase}, {"retry", s.retry}};
  if (s.inflight) v["inflight"] = true;
  return v;
}
ops::Send sendOf(const In& in, const json& v) {
  ops::Send s;
  s.entry = in.str("entry");
  s.n = static_cast<int>(in.integer("n"));
  s.fields = in.fields(v.contains("fields") ? v["fields"] : json(), "fields");
  s.eventId = in.str("event_id", "");
  s.phase = static_cast<int>(in.integer("phase", 1));
  s.retry = in.flag("retry");
  s.inflight = v.contains("inflight") && in.flag("inflight");
  return s;
}

json valueOf(const ops::Spawn& s) {
  return {{"pid", s.pid}, {"consumer", s.consumer}, {"log", s.log}, {"restart", s.restart}};
}

/// A step's flags, lists and texts, written only when set, not empty, not "": one list for writer and reader.
const std::array<std::pair<const char*, bool ops::Step::*>, 11> kStepFlags{{
    {"error", &ops::Step::error}, {"blocking", &ops::Step::blocking}, {"empty", &ops::Step::empty},
    {"flushed", &ops::Step::flushed}, {"set_up", &ops::Step::setUp}, {"stopping", &ops::Step::stopping},
    {"discards", &ops::Step::discards}, {"transient", &ops::Step::transient}, {"unseen", &ops::Step::unseen},
    {"unseen_entries", &ops::Step::unseenEntries}, {"in_multi", &ops::Step::inMulti}}};
const std::array<std::pair<const char*, std::vector<std::string> ops::Step::*>, 7> kStepLists{{
    {"tables", &ops::Step::tables}, {"acked", &ops::Step::acked}, {"returned", &ops::Step::returned},
    {"script_calls", &ops::Step::scriptCalls}, {"script_ids", &ops::Step::scriptIds},
    {"claimed_ids", &ops::Step::claimedIds}, {"ranged", &ops::Step::ranged}}};
const std::array<std::pair<const char*, std::string ops::Step::*>, 3> kStepTexts{
    {{"summary", &ops::Step::summary}, {"script", &ops::Step::script}, {"deletes_consumer", &ops::Step::deletesConsumer}}};

json valueOf(const ops::Step& s) {
  json j{{"server", s.server}, {"conn", s.conn}, {"verb", s.verb}, {"k", s.k}, {"detail", s.detail},
         {"t_req_us", s.tReqUs}, {"outcome", toString(s.outcome)}};
  for (const auto& [name, flag] : kStepFlags)
    if (s.*flag) j[name] = true;
  for (const auto& [name, text] : kStepTexts)
    if (!(s.*text).empty()) j[name] = s.*text;
  for (const auto& [name, list] : kStepLists)
    if (!(s.*list).empty()) j[name] = s.*list;
  if (!s.delivered.empty()) {
    json d = json::array();
    for (const auto& e : s.delivered) d.push_back({{"entry", e.entry}, {"fields", e.fields}});
    j["delivered"] = d;
  }
  return j;
}
ops::Step stepOf(const In& in, const json& v) {
  ops::Step s;
  s.server = in.str("server", "");
  s.conn = static_cast<int>(in.integer("conn", 0));
  s.verb = in.str("verb");
  s.k = static_cast<int>(in.integer("k"));
  s.detail = in.str("detail", "");
  s.tReqUs = in.integer("t_req_us", 0);
  std::string outcome = in.str("outcome", "ok");
  if (outcome == "cut") outcome = "forwarded"; // histories before the outcome had two kinds
  s.outcome = in.named("outcome", outcome, kOutcomes, "an outcome of docs/steps.md");
  for (const auto& [name, flag] : kStepFlags) s.*flag = in.flag(name);
  for (const auto& [name, text] : kStepTexts) s.*text = in.str(name, "");
  for (const auto& [name, list] : kStepLists) s.*list = in.strings(name);
  if (in.has("delivered")) {
    if (!v["delivered"].is_array()) in.fail("delivered", "is not an array");
    for (const auto& d : v["delivered"]) {
      In e(d, "delivered entry");
      s.delivered.push_back({e.str("entry"), e.fields(d.contains("fields") ? d["fields"] : json(), "fields")});
    }
  }
  return s;
}

json valueOf(const ops::FaultOp& f) {
  json j{{"fault", f.fault.str()}};
  if (f.signal) j["signal"] = f.signal;
  if (const auto& a = f.aged) {
    json aged{{"ms", a->ms}, {"pruned", a->pruned}};
    if (a->keys) aged["moved"] = a->moved, aged["expired"] = a->expired;
    if (!a->prune.empty()) aged["prune"] = a->prune;
    if (!a->skipped.empty()) aged["skipped"] = a->skipped;
    j["aged"] = std::move(aged);
  }
  return j;
}

json valueOf(const ops::Exit& e) {
  json j{{"by", e.by}};
  if (e.signal) j["signal"] = *e.signal;
  else j["status"] = e.status.value_or(-1);
  if (e.ignoredSigterm) j["ignored_sigterm"] = true;
  return j;
}
ops::Exit exitOf(const In& in) {
  ops::Exit e;
  if (in.has("status")) e.status = static_cast<int>(in.integer("status"));
  if (in.has("signal")) e.signal = static_cast<int>(in.integer("signal"));
  e.by = in.str("by", "");
  e.ignoredSigterm = in.flag("ignored_sigterm");
  return e;
}

json valueOf(const ops::Note& n) { return {{"message", n.message}}; }
json valueOf(const ops::Error& e) { return {{"message", e.message}}; }

json valueOf(const ops::Opaque& o) {
  return {{"server", o.server}, {"conn", o.conn}, {"direction", o.direction}, {"offset", o.offset}, {"reason", o.reason}};
}

json valueOf(const ops::Stall& s) {
  return {{"pending", s.pending}, {"last_delivered", s.lastDelivered}, {"restart", s.restart}, {"reason", s.reason}};
}

json valueOf(const ops::Escape& e) { return {{"pid", e.pid}, {"command", e.command}}; }

json valueOf(const ops::Request& r) {
  json j{{"id", r.id}, {"op", r.op}, {"role", r.role}, {"body", r.body}, {"key_header", r.keyHeader},
         {"ref", r.ref}, {"wait", r.wait}, {"server", r.server}};
  if (r.key) j["key"] = r.key;
  if (r.keyHeader) j["key_value"] = r.keyValue;
  if (r.burst) j["burst"] = r.burst;
  if (r.afterRetention) j["after_retention"] = true;
  if (r.agedMs) j["aged_ms"] = r.agedMs;
  if (r.reordered) j["reordered"] = true;
  return j;
}
ops::Request requestOf(const In& in) {
  ops::Request r;
  r.id = static_cast<int>(in.integer("id"));
  r.op = static_cast<int>(in.integer("op", 0));
  r.role = in.str("role");
  r.key = static_cast<int>(in.integer("key", 0));
  r.body = static_cast<int>(in.integer("body"));
  r.keyHeader = in.flag("key_header");
  r.keyValue = in.str("key_value", "");
  r.ref = in.str("ref", "");
  r.wait = in.str("wait", "answer");
  r.server = in.str("server", "");
  r.burst = static_cast<int>(in.integer("burst", 0));
  r.afterRetention = in.flag("after_retention");
  r.agedMs = in.integer("aged_ms", 0);
  r.reordered = in.flag("reordered");
  return r;
}

json valueOf(const ops::Call& c) {
  json j{{"id", c.id}, {"method", c.method}, {"path", c.path}, {"key_header", c.keyHeader}, {"ref", c.ref},
         {"digest", c.digest}, {"outcome", c.outcome}, {"status", c.status}};
  if (c.keyHeader) j["key"] = c.key;
  if (c.execution) j["execution"] = c.execution;
  return j;
}
ops::Call callOf(const In& in) {
  ops::Call c;
  c.id = static_cast<int>(in.integer("id"));
  c.method = in.str("method");
  c.path = in.str("path");
  c.keyHeader = in.flag("key_header");
  c.key = in.str("key", "");
  c.ref = in.str("ref", "");
  c.digest = in.str("digest", "");
  c.outcome = in.str("outcome");
  c.status = static_cast<int>(in.integer("status", 0));
  c.execution = static_cast<int>(in.integer("execution", 0));
  return c;
}

json valueOf(const ops::Response& r) {
  json j{{"id", r.id}, {"outcome", r.outcome}};
  if (r.status) j["status"] = r.status;
  if (!r.location.empty()) j["location"] = r.location;
  if (!r.digest.empty()) j["digest"] = r.digest;
  if (!r.body.empty()) j["body"] = r.body;
  if (!r.jsonDigest.empty()) j["json_digest"] = r.jsonDigest;
  if (!r.contentType.empty()) j["content_type"] = r.contentType;
  if (r.size) j["size"] = r.size;
  return j;
}
ops::Response responseOf(const In& in) {
  ops::Response r;
  r.id = static_cast<int>(in.integer("id"));
  r.outcome = in.str("outcome");
  r.status = static_cast<int>(in.integer("status", 0));
  r.location = in.str("location", "");
  r.digest = in.str("digest", "");
  r.body = in.str("body", "");
  r.jsonDigest = in.str("json_digest", "");
  r.contentType = in.str("content_type", "");
  r.size = static_cast<uint64_t>(in.integer("size", 0));
  return r;
}

json valueOf(const ops::Final& f) {
  json pending = json::array();
  for (const auto& p : f.pending)
    pending.push_back({{"entry", p.entry}, {"consumer", p.consumer}, {"idle_ms", p.idleMs}, {"deliveries", p.deliveries}});
  json j{{"observed", observedJson(f.observed)}, {"pending", pending}, {"undelivered", f.undelivered},
         {"stream", f.stream}, {"last_delivered", f.lastDelivered}, {"end", toString(f.end)},
         {"deadline", f.end == ops::RunEnd::Limit && f.limit == "deadline"}};
  if (!f.limit.empty()) j["limit"] = f.limit;
  if (!f.reason.empty()) j["reason"] = f.reason;
  if (!f.deadLetterWhere.empty()) {
    json letters = json::array();
    for (const auto& d : f.deadLetters)
      letters.push_back({{"id", d.id}, {"event_id", d.eventId ? json(*d.eventId) : json(nullptr)}});
    j["dead_letter"] = {{"where", f.deadLetterWhere}, {"entries", letters}};
  }
  if (f.outboxPending) j["outbox_pending"] = *f.outboxPending;
  if (!f.settledUnseen.empty()) j["settled_unseen"] = f.settledUnseen;
  return j;
}
ops::Final finalOf(const In& in, const json& v) {
  ops::Final f;
  f.observed = in.observed("observed");
  if (!in.has("pending") || !v["pending"].is_array()) in.fail("pending", "is missing or not an array");
  for (const auto& p : v["pending"]) {
    In e(p, "pending entry");
    f.pending.push_back({e.str("entry"), e.str("consumer", ""), e.integer("idle_ms", 0),
                         static_cast<int>(e.integer("deliveries", 0))});
  }
  if (!in.has("undelivered") || !v["undelivered"].is_array()) in.fail("undelivered", "is missing or not an array");
  f.undelivered = in.strings("undelivered");
  f.settledUnseen = in.strings("settled_unseen"); // absent before it was recorded: none
  f.stream = in.strings("stream");
  f.lastDelivered = in.str("last_delivered", "");
  f.limit = in.str("limit", "");
  f.reason = in.str("reason", "");
  if (in.has("outbox_pending")) f.outboxPending = in.integer("outbox_pending", 0);
  if (in.has("dead_letter")) {
    In d(v["dead_letter"], "dead_letter");
    f.deadLetterWhere = d.str("where");
    if (!v["dead_letter"].contains("entries") || !v["dead_letter"]["entries"].is_array())
      d.fail("entries", "is missing or not an array");
    for (const auto& e : v["dead_letter"]["entries"]) {
      In x(e, "dead letter");
      ops::DeadLetter l{x.str("id"), std::nullopt};
      if (x.has("event_id")) l.eventId = x.str("event_id");
      f.deadLetters.push_back(std::move(l));
    }
  }
  std::string end = in.str("end", "");
  if (end.empty()) { // histories before "end": a deadline is a limit; entries left otherwise mean stuck
    if (in.flag("deadline")) {
      f.end = ops::RunEnd::Limit;
      f.limit = "deadline";
      if (f.reason.empty()) f.reason = "the run hit its deadline";
    } else {
      f.end = f.pending.empty() && f.undelivered.empty() ? ops::RunEnd::Settled : ops::RunEnd::Stuck;
    }
    return f;
  }
  f.end = in.named("end", end, kEnds, "settled, stuck or limit");
  return f;
}

Record recordOf(const std::string& type, const json& v, const std::string& where) {
  In in(v, where);
  if (type == "plan") return planOf(in, v, where);
  if (type == "initial") return ops::Initial{in.observed("observed")};
  if (type == "send") return sendOf(in, v);
  if (type == "spawn")
    return ops::Spawn{static_cast<int>(in.integer("pid", 0)), in.str("consumer", ""), in.str("log", ""),
                      in.str("restart", "")};
  if (type == "step") return stepOf(in, v);
  if (type == "fault" || type == "kill") { // "kill": histories before faults were values
    ops::FaultOp f;
    f.fault = Fault::parse(in.str(type == "kill" ? "point" : "fault"), where);
    f.signal = static_cast<int>(in.integer("signal", 0));
    if (in.has("aged")) {
      In a(v["aged"], "aged");
      ops::Aged aged;
      aged.ms = a.integer("ms");
      aged.keys = a.has("moved");
      aged.moved = a.integer("moved", 0);
      aged.expired = a.integer("expired", 0);
      aged.prune = a.str("prune", "");
      aged.pruned = a.integer("pruned", 0);
      aged.skipped = a.str("skipped", "");
      f.aged = std::move(aged);
    }
    return f;
  }
  if (type == "exit") return exitOf(in);
  if (type == "note") return ops::Note{in.str("message")};
  if (type == "opaque")
    return ops::Opaque{in.str("server"), static_cast<int>(in.integer("conn", 0)), in.str("direction", ""),
                       static_cast<uint64_t>(in.integer("offset", 0)), in.str("reason", "")};
  if (type == "stall") {
    ops::Stall s;
    s.pending = in.has("pending") && v["pending"].is_number_integer() ? v["pending"].get<int64_t>() : 0;
    s.lastDelivered = in.str("last_delivered", "");
    s.restart = in.flag("restart");
    s.reason = in.str("reason", "");
    return s;
  }
  if (type == "escape") return ops::Escape{static_cast<int>(in.integer("pid")), in.str("command")};
  if (type == "final") return finalOf(in, v);
  if (type == "error") return ops::Error{in.str("message")};
  if (type == "request") return requestOf(in);
  if (type == "response") return responseOf(in);
  if (type == "call") return callOf(in);
  throw std::runtime_error(fmt::format("{}: unknown op type '{}'", where, type));
}

} // namespace

namespace ops {

const char* toString(StepOutcome o) {
  for (const auto& [x, name] : kOutcomes)
    if (x == o) return name;
  return "ok";
}

const char* toString(RunEnd e) {
  for (const auto& [x, name] : kEnds)
    if (x == e) return name;
  return "settled";
}

} // namespace ops

const char* typeOf(const Record& r) {
  static const char* names[] = {"plan", "initial", "send", "spawn", "step", "fault",
                                "exit", "note",    "opaque", "stall", "escape", "final", "error",
                                "request", "response", "call"};
  static_assert(std::variant_size_v<Record> == sizeof(names) / sizeof(names[0]));
  return names[r.index()];
}

void to_json(json& j, const Op& op) {
  j = json{{"index", op.index}, {"time_us", op.time_us}, {"type", op.type()}, {"process", op.process},
           {"value", std::visit([](const auto& r) { return valueOf(r); }, op.record)}};
}

void from_json(const json& j, Op& op) {
  if (!j.is_object()) throw std::runtime_error("an op is not an object");
  In in(j, "op");
  op.index = in.integer("index");
  op.time_us = in.integer("time_us", 0);
  std::string type = in.str("type");
  op.process = in.str("process", "");
  op.record = recordOf(type, j.contains("value") ? j["value"] : json::object(),
                       fmt::format("op {} ({})", op.index, type));
}

} // namespace idem
