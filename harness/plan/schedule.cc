#include "plan/schedule.h"

#include "core/error.h"
#include "plan/fault_kind.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

namespace idem {

int Schedule::phases() const {
  int p = 1;
  for (const auto& e : stream) p = std::max(p, e.phase);
  return p;
}

int Schedule::retries() const {
  std::set<int> seen;
  int r = 0;
  for (const auto& e : stream) {
    if (!seen.insert(e.event).second) ++r;
  }
  return r;
}

int Schedule::inflight() const {
  int n = 0;
  for (size_t i = 1; i < stream.size(); ++i) n += stream[i].inflight && stream[i].phase == stream[i - 1].phase;
  return n;
}

std::string Schedule::summary() const {
  std::vector<std::string> ks;
  for (const auto& k : faults) ks.push_back(k.str());
  if (http()) {
    std::vector<std::string> cs;
    for (const auto& c : client) cs.push_back(c.str());
    return fmt::format("{} request{} [{}], faults [{}]", client.size(), client.size() == 1 ? "" : "s", fmt::join(cs, ", "),
                       fmt::join(ks, ", ")) +
           (replicas > 1 ? fmt::format(", {} replicas", replicas) : "");
  }
  return fmt::format("{} event{}, {} retr{}, {} stream entr{}, faults [{}], restart {}", events.size(),
                     events.size() == 1 ? "" : "s", retries(), retries() == 1 ? "y" : "ies", stream.size(),
                     stream.size() == 1 ? "y" : "ies", fmt::join(ks, ", "), toString(restart)) +
         (inflight() > 0 ? fmt::format(", {} sent in flight", inflight()) : "") +
         (consumers > 1 ? fmt::format(", {} consumers", consumers) : "");
}

std::string toString(RestartStyle r) { return r == RestartStyle::NewName ? "new-name" : "same-name"; }

RestartStyle restartStyleFromString(const std::string& s, const std::string& what) {
  if (s == "new-name") return RestartStyle::NewName;
  if (s == "same-name") return RestartStyle::SameName;
  throw UsageError(fmt::format("{}: '{}' is not a restart style (new-name or same-name)", what, s));
}

void to_json(nlohmann::json& j, const Schedule& s) {
  j = nlohmann::json::object();
  j["version"] = kScheduleVersion;
  j["scenario"] = s.scenario;
  j["target"] = s.target;
  j["seed"] = s.seed;
  j["restart"] = toString(s.restart);
  auto events = nlohmann::json::array();
  for (const auto& e : s.events) events.push_back({{"n", e.n}, {"fields", e.fields}});
  j["events"] = events;
  auto stream = nlohmann::json::array();
  for (const auto& e : s.stream) {
    stream.push_back({{"event", e.event}, {"phase", e.phase}});
    if (e.inflight) stream.back()["inflight"] = true; // absent: false, as in files of earlier versions
  }
  if (!s.http()) j["stream"] = stream;
  else j["client"] = s.client;
  j["faults"] = s.faults;
  if (s.consumers != 1) j["consumers"] = s.consumers; // absent: one, as in files of earlier versions
  if (s.replicas != 1) j["replicas"] = s.replicas;   // absent: one server process at a time
  if (s.claimIdleMs > 0) j["claim_idle_ms"] = s.claimIdleMs; // absent: the run's --claim-idle-ms
  if (!s.values.empty()) j["values"] = s.values;
  if (!s.sinkPolicy.empty()) j["sink_policy"] = s.sinkPolicy; // absent: the scenario's (or --sink-policy)
}

namespace {

/// Throws naming the first member of object `j` that is not in `known` (`at`: the object's path, "" or
/// "stream[2].").
void unknownFields(const nlohmann::json& j, const std::string& what, const std::string& at,
                   std::initializer_list<const char*> known) {
  if (!j.is_object()) return;
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; }))
      throw UsageError(fmt::format("{}: field '{}{}': unknown field (known: {})", what, at, it.key(),
                                   fmt::join(known, ", ")));
}

} // namespace

Schedule scheduleFromJson(const nlohmann::json& j, const std::string& what) {
  auto field = [&](const char* name) -> const nlohmann::json& {
    if (!j.is_object() || !j.contains(name)) throw UsageError(fmt::format("{}: missing field '{}'", what, name));
    return j.at(name);
  };
  auto bad = [&](const std::string& f, const std::string& why) {
    return UsageError(fmt::format("{}: field '{}': {}", what, f, why));
  };
  // Whole numbers are read in range or rejected: a value that doesn't fit must not wrap into another event.
  auto whole = [&](const nlohmann::json& v, const std::string& f, int64_t lo, int64_t hi) -> int {
    bool ok = v.is_number_integer() &&
              (v.is_number_unsigned() ? v.get<uint64_t>() >= uint64_t(std::max<int64_t>(lo, 0)) && v.get<uint64_t>() <= uint64_t(hi)
                                     : v.get<int64_t>() >= lo && v.get<int64_t>() <= hi);
    if (!ok) throw bad(f, fmt::format("{} is not a whole number from {} to {}", v.dump(), lo, hi));
    return static_cast<int>(v.get<int64_t>());
  };
  Schedule s;
  int version = 0;
  if (j.is_object() && j.contains("version")) {
    if (!j["version"].is_number_integer()) throw bad("version", "must be an integer");
    version = j["version"].get<int>();
  }
  if (version != 1 && version != kScheduleVersion)
    throw bad("version", fmt::format("{} is not a schedule version this idemproof reads (1 or {})",
                                     j.is_object() && j.contains("version") ? j["version"].dump() : "missing",
                                     kScheduleVersion));
  const char* faultsField = version == 1 ? "kills" : "faults";
  // Every field is one this idemproof reads: a misspelt one ("fault") must not drop what it holds and turn
  // a failing schedule into a pass.
  unknownFields(j, what, "",
                {"version", "scenario", "target", "seed", "restart", "events", "stream", "client", faultsField,
                 "consumers", "replicas", "claim_idle_ms", "values", "sink_policy"});
  auto text = [&](const char* name, const std::string& absent) {
    if (!j.contains(name)) return absent;
    if (!j[name].is_string()) throw bad(name, fmt::format("{} is not a string", j[name].dump()));
    return j[name].get<std::string>();
  };
  field("scenario");
  s.scenario = text("scenario", "");
  s.target = text("target", "");
  if (j.contains("seed")) {
    if (!j["seed"].is_number_unsigned() && !(j["seed"].is_number_integer() && j["seed"].get<int64_t>() >= 0))
      throw bad("seed", fmt::format("{} is not a whole number from 0 to 18446744073709551615", j["seed"].dump()));
    s.seed = j["seed"].get<uint64_t>();
  }
  s.restart = restartStyleFromString(text("restart", "new-name"), what + ": field 'restart'");
  s.values = text("values", "");
  const auto& events = field("events");
  if (!events.is_array() || events.empty()) throw bad("events", "must be a non-empty array");
  std::set<int> ns;
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    std::string f = fmt::format("events[{}]", i);
    if (!e.is_object() || !e.contains("n")) throw bad(f + ".n", "is required");
    unknownFields(e, what, f + ".", {"n", "fields"});
    Event ev;
    ev.n = whole(e["n"], f + ".n", 1, kMaxEventNumber);
    if (!ns.insert(ev.n).second) throw bad(f + ".n", fmt::format("event {} appears twice", ev.n));
    if (e.contains("fields")) {
      if (!e["fields"].is_object()) throw bad(f + ".fields", "must be an object of strings");
      for (auto it = e["fields"].begin(); it != e["fields"].end(); ++it) {
        if (!it.value().is_string()) throw bad(f + ".fields." + it.key(), "must be a string");
        ev.fields[it.key()] = it.value().get<std::string>();
      }
    }
    s.events.push_back(std::move(ev));
  }
  if (j.contains("client")) { // an HTTP schedule: the client's requests instead of a stream
    const auto& client = j["client"];
    if (!client.is_array() || client.empty()) throw bad("client", "must be a non-empty array of requests");
    if (j.contains("stream")) throw bad("stream", "an HTTP schedule (with \"client\") has no stream");
    for (size_t i = 0; i < client.size(); ++i) {
      std::string f = fmt::format("client[{}]", i);
      ClientOp op = clientOpFromJson(client[i], what, f);
      for (int n : {op.key, op.body, op.other})
        if (n && !ns.count(n)) throw bad(f, fmt::format("no event {}", n));
      s.client.push_back(op);
    }
  }
  const nlohmann::json noStream = nlohmann::json::array();
  const auto& stream = s.http() ? noStream : field("stream");
  if (!s.http() && (!stream.is_array() || stream.empty())) throw bad("stream", "must be a non-empty array");
  for (size_t i = 0; i < stream.size(); ++i) {
    const auto& e = stream[i];
    std::string f = fmt::format("stream[{}]", i);
    StreamEntry se;
    if (e.is_number()) {
      se.event = whole(e, f, 1, kMaxEventNumber);
    } else if (e.is_object() && e.contains("event")) {
      unknownFields(e, what, f + ".", {"event", "phase", "inflight"});
      se.event = whole(e["event"], f + ".event", 1, kMaxEventNumber);
      if (e.contains("phase")) se.phase = whole(e["phase"], f + ".phase", 1, kMaxPhase);
      if (e.contains("inflight")) {
        if (!e["inflight"].is_boolean()) throw bad(f + ".inflight", "must be true or false");
        se.inflight = e["inflight"].get<bool>();
      }
    } else {
      throw bad(f, "must be an event number or {\"event\": n, \"phase\": p, \"inflight\": true|false}");
    }
    if (!ns.count(se.event)) throw bad(f + ".event", fmt::format("no event {}", se.event));
    if (i > 0 && se.phase < s.stream.back().phase) throw bad(f + ".phase", "phases must not decrease along the stream");
    s.stream.push_back(se);
  }
  if (j.contains("consumers")) s.consumers = whole(j["consumers"], "consumers", 1, kMaxConsumers);
  if (s.http() && s.consumers != 1)
    throw bad("consumers", fmt::format("{} consumers: an HTTP schedule runs server replicas (\"replicas\"); leave consumers out",
                                       s.consumers));
  if (j.contains("replicas")) {
    if (!s.http()) throw bad("replicas", "only an HTTP schedule (with \"client\") runs server replicas; a consumer "
                                         "schedule has \"consumers\"");
    s.replicas = whole(j["replicas"], "replicas", 1, kMaxReplicas);
  }
  for (size_t i = 0; i < s.client.size(); ++i)
    if (s.client[i].replica > s.replicas)
      throw bad(fmt::format("client[{}].replica", i), fmt::format("replica {} of a schedule with {} replica{} (\"replicas\")",
                                                                 s.client[i].replica, s.replicas, s.replicas == 1 ? "" : "s"));
  if (j.contains("claim_idle_ms")) s.claimIdleMs = whole(j["claim_idle_ms"], "claim_idle_ms", 1, kMaxClaimIdleMs);
  if (j.contains("sink_policy")) {
    const auto& p = j["sink_policy"];
    if (!p.is_string() || (p.get<std::string>() != "honour" && p.get<std::string>() != "ignore"))
      throw bad("sink_policy", fmt::format("{} is not a sink policy (\"honour\" or \"ignore\")", p.dump()));
    s.sinkPolicy = p.get<std::string>();
  }
  if (j.contains(faultsField)) {
    const auto& faults = j[faultsField];
    if (!faults.is_array()) throw bad(faultsField, "must be an array of faults");
    for (size_t i = 0; i < faults.size(); ++i) {
      std::string f = fmt::format("{}[{}]", faultsField, i);
      if (!faults[i].is_string()) throw bad(f, "must be a string like after:COMMIT#3");
      Fault fault = Fault::parse(faults[i].get<std::string>(), fmt::format("{}: field '{}'", what, f));
      if (version == 1 && !fault.isKill()) throw bad(f, "a version 1 schedule holds kill points only");
      if (s.http()) requireHttpFault(fault, fmt::format("{}: field '{}'", what, f), s.replicas);
      for (const auto& other : s.faults)
        if (other.samePoint(fault)) throw bad(f, fmt::format("a second fault at {}", fault.point()));
      s.faults.push_back(std::move(fault));
    }
  }
  return s;
}

int reachableProcesses(const Schedule& s, const Fault* except) {
  const int at = s.http() ? s.replicas : s.consumers;
  int n = at;
  for (const auto& f : s.faults) {
    if (&f == except) continue;
    // A process held, delayed or paused lives on: no replacement.
    const auto action = faultKind(f.kind, "fault").effect(f).action;
    if (action == Effect::Action::Hold || action == Effect::Action::Delay || action == Effect::Action::Pause) continue;
    n += f.kind == "restart" ? at : 1;
  }
  return n;
}

void checkFaultProcesses(const Schedule& s, const std::function<std::string(size_t)>& what) {
  auto number = [](const std::string& label) { return std::stoi(label.substr(1)); };
  for (size_t i = 0; i < s.faults.size(); ++i) {
    const Fault& f = s.faults[i];
    std::vector<std::string> named;
    if (!f.process.empty()) named.push_back(f.process);
    // The process a hold or a pause waits for: hold:cN:...:cM:when:VERB#j
    if (!faultKind(f.kind, "fault").effect(f).until.empty()) named.push_back(f.args[0]);
    const int reach = reachableProcesses(s, &f);
    for (const auto& p : named) {
      if (isServerLabel(p) != s.http())
        throw UsageError(fmt::format("{}: '{}' names process {}: {}", what(i), f.str(), p,
                                     s.http() ? "an HTTP run's processes are its server's, s1, s2, …"
                                              : "sN names an HTTP server process; a consumer run's are c1, c2, … (and r1, … for a relay)"));
      if (s.http()) {
        if (number(p) <= reach) continue;
        throw UsageError(fmt::format("{}: '{}' names process {}, which no run of this schedule starts: {} replica{} "
                                     "(s1..s{}) and at most {} replacement{} by its other faults",
                                     what(i), f.str(), p, s.replicas, s.replicas == 1 ? "" : "s", s.replicas,
                                     reach - s.replicas, reach - s.replicas == 1 ? "" : "s"));
      }
      if (isRelayLabel(p)) {
        // r1, and one replacement for each other fault that can end a relay process.
        int relays = 1;
        for (const auto& g : s.faults) {
          const auto action = faultKind(g.kind, "fault").effect(g).action;
          if (&g == &f || action == Effect::Action::Hold || action == Effect::Action::Delay || action == Effect::Action::Pause)
            continue;
          if (g.kind == "restart" || isRelayLabel(g.process)) ++relays;
        }
        if (number(p) <= relays) continue;
        throw UsageError(fmt::format("{}: '{}' names process {}, which no run of this schedule starts: the relay r1 "
                                     "and at most {} replacement{} by its other faults",
                                     what(i), f.str(), p, relays - 1, relays == 2 ? "" : "s"));
      }
      if (number(p) <= reach) continue;
      throw UsageError(fmt::format("{}: '{}' names process {}, which no run of this schedule starts: {} consumer{} "
                                   "(c1..c{}) and at most {} replacement{} by its other faults",
                                   what(i), f.str(), p, s.consumers, s.consumers == 1 ? "" : "s", s.consumers,
                                   reach - s.consumers, reach - s.consumers == 1 ? "" : "s"));
    }
  }
}

} // namespace idem
