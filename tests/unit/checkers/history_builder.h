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

  int64_t ack(const std::string& proc, const std::vector<std::string>& entries, const std::string& outcome = "ok") {
    ops::Step s = stepOf("valkey", "XACK", "XACK ...");
    s.acked = entries;
    s.outcome = outcomeOf(outcome);
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
    s.conn = 1;
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

} // namespace idem::testing
