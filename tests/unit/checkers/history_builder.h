#pragma once
// Builds histories by hand for checker tests, op by op, as the typed records of history/history.h.
#include "history/history.h"
#include "scenario/scenario.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace idem::testing {

inline Scenario builtin(const std::string& name) {
  return loadScenario(name, std::filesystem::path(IDEM_SOURCE_DIR) / "scenarios");
}

/// Observed rows from JSON: {"invariant": [[col, ...], ...]}, columns as strings or null.
inline Observed observedOf(const nlohmann::json& j) {
  Observed out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    Rows rows;
    for (const auto& r : it.value()) {
      Row row;
      for (const auto& c : r) row.push_back(c.is_null() ? std::nullopt : std::optional<std::string>(c.is_string() ? c.get<std::string>() : c.dump()));
      rows.push_back(std::move(row));
    }
    out[it.key()] = std::move(rows);
  }
  return out;
}

/// The final record of a history (its last op); throws if it is not one.
inline ops::Final& finalOf(std::vector<Op>& ops) { return std::get<ops::Final>(ops.back().record); }

/// Appends ops to a History. Entry ids are 1-0, 1-1, ... in send order; event ids are deterministic UUIDs;
/// step occurrence numbers k count per verb over the whole run, as the proxies do.
class HistoryBuilder {
public:
  using json = nlohmann::json;

  explicit HistoryBuilder(const Scenario& s, std::vector<std::string> faults = {}) : s_(s) {
    ops::Plan p;
    p.schedule.scenario = s.name;
    for (const auto& f : faults) p.schedule.faults.push_back(Fault::parse(f, "test"));
    p.target = "test";
    p.claimIdleMs = 10;
    p.stream = "idem:stream";
    p.group = "idem";
    plan_ = h.append("harness", std::move(p));
  }

  /// The connection the next PostgreSQL steps are on (a consumer's reconnect moves on to a new one).
  int pgConn = 1;
  /// The plan's claim_idle_redelivers: the broker delivers again what a live consumer holds too long.
  bool claimIdleRedelivers = false;

  void initial(const json& observed) { h.append("harness", ops::Initial{observedOf(observed)}); }

  std::string eventId(int n) const { return fmt::format("00000000-0000-4000-8000-{:012d}", n); }

  /// Sends event n (a retry when it was sent before) and returns the entry id.
  std::string send(int n, std::map<std::string, std::string> fields, int phase = 1) {
    fields["n"] = std::to_string(n);
    fields[s_.idField()] = eventId(n);
    bool retry = sent_.count(n) > 0;
    sent_[n] = fields;
    std::string entry = fmt::format("1-{}", entries_++);
    entryEvent_[entry] = n;
    order_.emplace_back(entry, n);
    h.append("producer", ops::Send{entry, n, eventId(n), fields, phase, retry});
    return entry;
  }

  int64_t spawn(const std::string& proc) {
    return h.append(proc, ops::Spawn{100 + static_cast<int>(proc.size()), proc, "/tmp/run/" + proc + ".log", "first"});
  }

  /// A read (XREADGROUP, XAUTOCLAIM, XCLAIM) that delivered `entries` to `proc`.
  int64_t read(const std::string& proc, const std::string& verb, const std::vector<std::string>& entries) {
    ops::Step s = stepOf("valkey", verb, verb + " ...");
    for (const auto& e : entries) s.delivered.push_back({e, sent_.at(entryEvent_.at(e))});
    s.empty = entries.empty();
    return h.append(proc, std::move(s));
  }

  int64_t step(const std::string& proc, const std::string& server, const std::string& verb, const std::string& detail = "",
               const std::string& outcome = "ok") {
    ops::Step s = stepOf(server, verb, detail.empty() ? verb : detail);
    s.outcome = outcomeOf(outcome);
    return h.append(proc, std::move(s));
  }

  /// A PostgreSQL statement as the tracker decodes it: the tables it names, its reply's summary ("INSERT 0
  /// 1"), and `error` when the reply was one (the summary is then the server's message).
  int64_t sql(const std::string& proc, const std::string& verb, const std::string& detail,
              std::vector<std::string> tables, const std::string& summary, bool error = false,
              const std::string& outcome = "ok") {
    ops::Step s = stepOf("pg", verb, detail);
    s.tables = std::move(tables);
    s.summary = summary;
    s.error = error;
    s.outcome = outcomeOf(outcome);
    return h.append(proc, std::move(s));
  }

  int64_t ack(const std::string& proc, const std::vector<std::string>& entries, const std::string& outcome = "ok") {
    ops::Step s = stepOf("valkey", "XACK", "XACK ...");
    s.acked = entries;
    s.outcome = outcomeOf(outcome);
    return h.append(proc, std::move(s));
  }

  /// A step of a broker other than Valkey (server "kafka": FETCH, COMMIT_OFFSET, …), with the entries it
  /// delivered and those it acknowledged (an offset commit names every record below its position).
  int64_t brokerStep(const std::string& proc, const std::string& server, const std::string& verb,
                     const std::vector<std::string>& delivered, const std::vector<std::string>& acked = {},
                     const std::string& outcome = "ok") {
    ops::Step s = stepOf(server, verb, verb + " ...");
    for (const auto& e : delivered) s.delivered.push_back({e, sent_.at(entryEvent_.at(e))});
    s.acked = acked;
    s.outcome = outcomeOf(outcome);
    return h.append(proc, std::move(s));
  }

  /// A step that hands `entries` back to the broker for redelivery (an AMQP nack with requeue, a NATS -NAK).
  int64_t giveBack(const std::string& proc, const std::string& server, const std::string& verb,
                   const std::vector<std::string>& entries) {
    ops::Step s = stepOf(server, verb, verb + " ... requeue");
    s.returned = entries;
    return h.append(proc, std::move(s));
  }

  /// A step that settles `entries` without applying them (an AMQP reject without requeue, a NATS +TERM).
  int64_t discard(const std::string& proc, const std::string& server, const std::string& verb,
                  const std::vector<std::string>& entries) {
    ops::Step s = stepOf(server, verb, verb + " ...");
    s.acked = entries;
    s.discards = true;
    return h.append(proc, std::move(s));
  }

  /// A kill at `point`, then the exit it causes.
  int64_t kill(const std::string& proc, const std::string& point) {
    int64_t i = h.append(proc, ops::FaultOp{Fault::parse(point, "test"), 9});
    ops::Exit e;
    e.signal = 9;
    e.by = "harness";
    h.append(proc, e);
    return i;
  }

  /// A fault other than a kill that fired on `proc` (a hold: the controller's fault op when it holds).
  int64_t fault(const std::string& proc, const std::string& text) {
    return h.append(proc, ops::FaultOp{Fault::parse(text, "test"), 0});
  }

  /// A note on `proc` (a hold's release: "hold <fault> released: <why>").
  int64_t note(const std::string& proc, const std::string& message) { return h.append(proc, ops::Note{message}); }

  int64_t exit(const std::string& proc, std::optional<int> status, std::optional<int> signal, const std::string& by) {
    ops::Exit e;
    e.status = status;
    e.signal = signal;
    e.by = by;
    return h.append(proc, e);
  }

  /// The final op. `end` is how the run ended (settled, stuck, limit); "" means settled when nothing is
  /// left pending or undelivered, else stuck (proven), as the supervisor writes it.
  void finalOp(const json& observed, const json& pending = json::array(), const json& undelivered = json::array(),
               std::string end = "") {
    ops::Final f;
    f.observed = observedOf(observed);
    for (const auto& p : pending)
      f.pending.push_back({p.at("entry").get<std::string>(), p.value("consumer", ""), p.value("idle_ms", int64_t{0}),
                           p.value("deliveries", 0)});
    for (const auto& u : undelivered) f.undelivered.push_back(u.get<std::string>());
    for (int i = 0; i < entries_; ++i) f.stream.push_back(fmt::format("1-{}", i));
    if (end.empty()) end = f.pending.empty() && f.undelivered.empty() ? "settled" : "stuck";
    f.end = end == "limit" ? ops::RunEnd::Limit : end == "stuck" ? ops::RunEnd::Stuck : ops::RunEnd::Settled;
    if (end == "limit") {
      f.limit = "deadline";
      f.reason = "deadline of 60 s reached with c1 silent for 58 s holding 1 entry; raise --deadline";
    }
    h.append("harness", std::move(f));
  }

  /// The ops, with the plan's schedule holding the events and stream entries sent (as a real plan does).
  std::vector<Op> ops() const {
    auto out = h.ops();
    auto& plan = std::get<ops::Plan>(out[static_cast<size_t>(plan_)].record);
    for (const auto& [n, fields] : sent_) plan.schedule.events.push_back({n, fields});
    for (const auto& [entry, n] : order_) plan.schedule.stream.push_back({n, 1});
    plan.claimIdleRedelivers = claimIdleRedelivers;
    return out;
  }

  History h;

private:
  static ops::StepOutcome outcomeOf(const std::string& text) {
    for (auto o : {ops::StepOutcome::Ok, ops::StepOutcome::KilledBefore, ops::StepOutcome::KilledAfter,
                   ops::StepOutcome::Forwarded, ops::StepOutcome::Withheld, ops::StepOutcome::Unobserved,
                   ops::StepOutcome::DroppedBefore, ops::StepOutcome::DroppedAfter, ops::StepOutcome::Answered})
      if (text == ops::toString(o)) return o;
    throw std::runtime_error("no step outcome " + text);
  }

  ops::Step stepOf(const std::string& server, const std::string& verb, const std::string& detail) {
    ops::Step s;
    s.server = server;
    s.conn = server == "pg" ? pgConn : 1;
    s.verb = verb;
    s.k = ++k_[verb];
    s.detail = detail;
    return s;
  }

  const Scenario& s_;
  int64_t plan_ = 0;
  std::map<int, std::map<std::string, std::string>> sent_;
  std::map<std::string, int> entryEvent_;
  std::vector<std::pair<std::string, int>> order_; ///< entries in send order
  std::map<std::string, int> k_;
  int entries_ = 0;
};

/// Builds an orders history (HTTP): payload n has ref "ref-n", sku-1, qty n; the client's requests and
/// answers, and the steps and kills of the server s1.
class HttpHistoryBuilder {
public:
  explicit HttpHistoryBuilder(int payloads) {
    ops::Plan p;
    p.schedule.scenario = "orders";
    for (int n = 1; n <= payloads; ++n)
      p.schedule.events.push_back(Event{n, {{"customer", "alice"}, {"sku", "sku-1"}, {"qty", std::to_string(n)}, {"amount", "100"}}});
    p.schedule.client = {ClientOp{}};
    p.target = "test";
    h.append("harness", std::move(p));
    h.append("harness", ops::Initial{observedOf({{"effects", nlohmann::json::array()}, {"ledger", ledger(1000)}})});
  }
  /// The server process the next requests are written to (a replica: s1, s2, …).
  void to(const std::string& server) { server_ = server; }
  /// Writes request r with `key` (0: none) and payload `body`.
  int request(int key, int body, const std::string& role = "original", int burst = 0, bool afterRetention = false,
              int64_t agedMs = 0, bool reordered = false) {
    ops::Request r;
    r.id = ++n_;
    r.op = r.id;
    r.role = role;
    r.key = key;
    r.body = body;
    r.keyHeader = key > 0;
    r.keyValue = key > 0 ? fmt::format("\"k{}\"", key) : "";
    r.ref = fmt::format("ref-{}", body);
    r.wait = "answer";
    r.server = server_;
    r.burst = burst;
    r.afterRetention = afterRetention;
    r.agedMs = agedMs;
    r.reordered = reordered;
    h.append("client", r);
    return r.id;
  }
  void answer(int id, int status, const std::string& body, const std::string& location = "", const char* outcome = "answered") {
    h.append("client", ops::Response{id, outcome, status, location, body.empty() ? "" : fnv(body), body});
  }
  /// An answer that says it is JSON, with the digest of its canonical form as the client computes it.
  void answerJson(int id, int status, const std::string& body, const std::string& location = "") {
    ops::Response r{id, "answered", status, location, fnv(body), body};
    r.jsonDigest = fnv(nlohmann::json::parse(body).dump());
    r.contentType = "application/json";
    r.size = body.size();
    h.append("client", r);
  }
  /// A request that got no answer (`outcome`: how its connection ended).
  void lost(int id, const char* outcome = "reset") { h.append("client", ops::Response{id, outcome, 0, "", "", ""}); }
  /// A PostgreSQL statement of the server on its connection `conn`; k counts per verb over the run, as the
  /// proxy does.
  void sql(const std::string& verb, const std::string& detail = "", int conn = 1,
           std::vector<std::string> tables = {}, const std::string& summary = "",
           ops::StepOutcome outcome = ops::StepOutcome::Ok) {
    ops::Step s;
    s.outcome = outcome;
    s.server = "pg";
    s.conn = conn;
    s.tables = std::move(tables);
    s.verb = verb;
    s.k = ++k_[verb];
    s.detail = detail.empty() ? verb : detail;
    s.summary = summary;
    h.append("s1", s);
  }
  /// A PostgreSQL statement of the server on its connection `conn` that an error fault answered in
  /// PostgreSQL's place (the fault op, then the step).
  void sqlError(const std::string& verb, int conn = 1) {
    fault(fmt::format("error:before:{}#{}", verb, k_[verb] + 1));
    ops::Step s;
    s.outcome = ops::StepOutcome::Answered;
    s.error = true;
    s.server = "pg";
    s.conn = conn;
    s.verb = verb;
    s.k = ++k_[verb];
    s.detail = verb;
    s.summary = "error instead of: " + verb;
    h.append("s1", s);
  }
  /// A Valkey command of the server on its connection `conn`, answered `summary`, written `atUs` µs into the
  /// run.
  void valkey(const std::string& verb, const std::string& detail, int conn, const std::string& summary, int64_t atUs) {
    ops::Step s;
    s.server = "valkey";
    s.conn = conn;
    s.verb = verb;
    s.k = ++k_[verb];
    s.detail = detail;
    s.summary = summary;
    s.tReqUs = atUs;
    h.append("s1", s);
  }
  /// An order's transaction of the server whose COMMIT never reached PostgreSQL: the server was killed
  /// before it (BEGIN, INSERT INTO orders, COMMIT killed-before, the kill).
  void orderKilledBeforeCommit() {
    sql("BEGIN");
    sql("INSERT", "INSERT INTO orders (ref) VALUES ($1)", 1, {"orders"}, "INSERT 0 1");
    sql("COMMIT", "COMMIT", 1, {}, "", ops::StepOutcome::KilledBefore);
    kill(fmt::format("before:COMMIT#{}", k_["COMMIT"]));
  }
  /// A kill of the server at `point` (the history's fault op).
  void kill(const std::string& point) { h.append("s1", ops::FaultOp{Fault::parse(point, "test"), 9}); }
  /// A fault of another kind at the server's step (drop, error, restart, ...): no signal.
  void fault(const std::string& point) { h.append("s1", ops::FaultOp{Fault::parse(point, "test"), 0}); }
  /// The final op: effects per payload, the stock the ledger reads; `limit` names the limit the run ended
  /// at ("" when it settled).
  void finalOp(const std::map<int, int>& effects, int64_t stock, const std::string& limit = "") {
    auto rowsJson = nlohmann::json::array();
    for (const auto& [body, n] : effects) rowsJson.push_back({fmt::format("ref-{}", body), std::to_string(n)});
    ops::Final f;
    f.observed = observedOf({{"effects", rowsJson}, {"ledger", ledger(stock)}});
    if (!limit.empty()) {
      f.end = ops::RunEnd::Limit;
      f.limit = limit;
      f.reason = "server s1 did not accept a connection on PORT 1 within 3000 ms; raise --start-timeout";
    }
    h.append("harness", f);
  }
  std::vector<Op> ops() const { return h.ops(); }

  History h;

private:
  static std::string fnv(const std::string& s) { return fmt::format("{:016x}", std::hash<std::string>{}(s)); }
  /// The ledger invariant's one row: [["sku-1", stock]].
  static nlohmann::json ledger(int64_t stock) {
    return nlohmann::json::array({nlohmann::json::array({"sku-1", std::to_string(stock)})});
  }
  int n_ = 0;
  std::string server_ = "s1";
  std::map<std::string, int> k_;
};

} // namespace idem::testing
