#pragma once
// Builds histories by hand for checker tests, op by op, in the format of core/history.h.
#include "core/history.h"
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

/// Appends ops to a History. Entry ids are 1-0, 1-1, ... in send order; event ids are deterministic UUIDs;
/// step occurrence numbers k count per verb over the whole run, as the proxies do.
class HistoryBuilder {
public:
  using json = nlohmann::json;

  explicit HistoryBuilder(const Scenario& s, std::vector<std::string> kills = {}) : s_(s) {
    h.append("plan", "harness",
             {{"schedule", {{"scenario", s.name}, {"kills", kills}, {"restart", "new-name"}}},
              {"target", "test"}, {"claim_idle_ms", 10}, {"stream", "idem:stream"}, {"group", "idem"}});
  }

  void initial(json observed) { h.append("initial", "harness", {{"observed", std::move(observed)}}); }

  std::string eventId(int n) const { return fmt::format("00000000-0000-4000-8000-{:012d}", n); }

  /// Sends event n (a retry when it was sent before) and returns the entry id.
  std::string send(int n, std::map<std::string, std::string> fields, int phase = 1) {
    fields["n"] = std::to_string(n);
    fields[s_.idField()] = eventId(n);
    bool retry = sent_.count(n) > 0;
    sent_[n] = fields;
    std::string entry = fmt::format("1-{}", entries_++);
    entryEvent_[entry] = n;
    h.append("send", "producer",
             {{"entry", entry}, {"n", n}, {"event_id", eventId(n)}, {"fields", fields}, {"phase", phase}, {"retry", retry}});
    return entry;
  }

  int64_t spawn(const std::string& proc) {
    return h.append("spawn", proc, {{"pid", 100 + static_cast<int>(proc.size())}, {"consumer", proc},
                                    {"log", "/tmp/run/" + proc + ".log"}, {"restart", "first"}});
  }

  /// A read (XREADGROUP, XAUTOCLAIM, XCLAIM) that delivered `entries` to `proc`.
  int64_t read(const std::string& proc, const std::string& verb, const std::vector<std::string>& entries) {
    json delivered = json::array();
    for (const auto& e : entries) delivered.push_back({{"entry", e}, {"fields", sent_.at(entryEvent_.at(e))}});
    json v = stepValue("valkey", verb, verb + " ...");
    v["delivered"] = delivered;
    if (entries.empty()) v["empty"] = true;
    return h.append("step", proc, v);
  }

  int64_t step(const std::string& proc, const std::string& server, const std::string& verb, const std::string& detail = "",
               const std::string& outcome = "ok") {
    json v = stepValue(server, verb, detail.empty() ? verb : detail);
    v["outcome"] = outcome;
    return h.append("step", proc, v);
  }

  int64_t ack(const std::string& proc, const std::vector<std::string>& entries, const std::string& outcome = "ok") {
    json v = stepValue("valkey", "XACK", "XACK ...");
    v["acked"] = entries;
    v["outcome"] = outcome;
    return h.append("step", proc, v);
  }

  /// A kill at `point`, then the exit it causes.
  int64_t kill(const std::string& proc, const std::string& point) {
    int64_t i = h.append("kill", proc, {{"point", point}, {"signal", 9}});
    h.append("exit", proc, {{"signal", 9}, {"by", "harness"}});
    return i;
  }

  int64_t exit(const std::string& proc, json value) { return h.append("exit", proc, std::move(value)); }

  /// The final op. `end` is how the run ended (settled, stuck, limit); "" means settled when nothing is
  /// left pending or undelivered, else stuck (proven), as the supervisor writes it.
  void finalOp(json observed, json pending = json::array(), json undelivered = json::array(), std::string end = "") {
    json stream = json::array();
    for (int i = 0; i < entries_; ++i) stream.push_back(fmt::format("1-{}", i));
    if (end.empty()) end = pending.empty() && undelivered.empty() ? "settled" : "stuck";
    json v{{"observed", std::move(observed)}, {"pending", std::move(pending)}, {"undelivered", std::move(undelivered)},
           {"stream", stream}, {"deadline", end == "limit"}, {"end", end}};
    if (end == "limit") v["reason"] = "deadline of 60 s reached with c1 silent for 58 s holding 1 entry; raise --deadline";
    h.append("final", "harness", std::move(v));
  }

  std::vector<Op> ops() const { return h.ops(); }

  History h;

private:
  json stepValue(const std::string& server, const std::string& verb, const std::string& detail) {
    return {{"server", server}, {"conn", 1}, {"verb", verb}, {"k", ++k_[verb]}, {"detail", detail},
            {"t_req_us", 0}, {"error", false}, {"outcome", "ok"}};
  }

  const Scenario& s_;
  std::map<int, std::map<std::string, std::string>> sent_;
  std::map<std::string, int> entryEvent_;
  std::map<std::string, int> k_;
  int entries_ = 0;
};

} // namespace idem::testing
