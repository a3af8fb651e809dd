#include "core/error.h"
#include "scenario/json_fields.h"
#include "scenario/scenario_parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

namespace idem {

namespace detail {

namespace {

/// Why `value` is not acceptable for the drawn field `f`, or "" when it is.
std::string badDrawnValue(const FieldGen& f, const std::string& value, const std::vector<std::string>& keys) {
  if (f.gen == "key" && std::find(keys.begin(), keys.end(), value) == keys.end())
    return fmt::format("'{}' is not one of the keys ({})", value, joinNames(keys));
  if (f.gen == "pick" && std::find(f.values.begin(), f.values.end(), value) == f.values.end())
    return fmt::format("'{}' is not one of the values ({})", value, joinNames(f.values));
  if (f.gen == "int") {
    auto v = parseInteger(value);
    if (!v || *v < f.min || *v > f.max) return fmt::format("'{}' is not an integer in [{}, {}]", value, f.min, f.max);
  }
  return "";
}

bool drawn(const FieldGen& f) { return f.gen == "key" || f.gen == "int" || f.gen == "pick"; }

} // namespace

DefaultSchedule parseDefaultSchedule(const nlohmann::json& j, const std::string& what, const Scenario& s) {
  FieldReader top(j, what, "default_schedule");
  top.onlyKnown({"events", "stream", "client"});
  if (!top.has("events") || !top.raw("events").is_array() || top.raw("events").empty())
    top.fail("events", "must be a non-empty array of events (objects of field values)");
  DefaultSchedule d;
  const auto& events = top.raw("events");
  for (size_t i = 0; i < events.size(); ++i) {
    std::string path = fmt::format("default_schedule.events[{}]", i);
    FieldReader r(events[i], what, path);
    Event ev;
    ev.n = static_cast<int>(i) + 1;
    // A poison event of the scenario takes its poison values; they are exempt from the generators' ranges.
    const bool poison = s.poison && std::count(s.poison->events.begin(), s.poison->events.end(), ev.n) > 0;
    if (poison) ev.fields = s.poison->fields;
    for (auto it = events[i].begin(); it != events[i].end(); ++it) {
      if (poison && s.poison->fields.count(it.key())) continue;
      const FieldGen* f = s.fieldGen(it.key());
      if (!f) r.fail(it.key(), fmt::format("is not a field (fields: {})", fieldNames(s.fields)));
      if (f->gen == "uuid") r.fail(it.key(), "is a uuid, generated fresh for every execution; leave it out");
      if (!drawn(*f)) r.fail(it.key(), fmt::format("is computed (gen {}); leave it out", f->gen));
      std::string value;
      if (it.value().is_string()) value = it.value().get<std::string>();
      else if (it.value().is_number_integer()) value = std::to_string(it.value().get<int64_t>());
      else r.fail(it.key(), "must be a string (or an integer)");
      std::string why = badDrawnValue(*f, value, s.keys);
      if (!why.empty()) r.fail(it.key(), why);
      ev.fields[f->name] = value;
    }
    for (const auto& f : s.fields) {
      if (drawn(f) && !ev.fields.count(f.name)) r.fail(f.name, fmt::format("is required (gen {})", f.gen));
    }
    d.events.push_back(std::move(ev));
  }
  if (s.kind == "http") { // the client's requests instead of a stream (plan/client_op.h)
    if (top.has("stream")) top.fail("stream", "an HTTP scenario has no stream; its default schedule has \"client\"");
    if (!top.has("client") || !top.raw("client").is_array() || top.raw("client").empty())
      top.fail("client", "must be a non-empty array of requests, e.g. {\"op\": \"send\", \"key\": 1}");
    const auto& client = top.raw("client");
    for (size_t i = 0; i < client.size(); ++i) {
      std::string path = fmt::format("default_schedule.client[{}]", i);
      ClientOp op = clientOpFromJson(client[i], what, path);
      for (int n : {op.key, op.body, op.other})
        if (n < 0 || n > static_cast<int>(d.events.size()))
          fieldError(what, path, fmt::format("no event {} (events are numbered 1 to {})", n, d.events.size()));
      d.client.push_back(op);
    }
    checkClientOps(s, d.client, what, "default_schedule.client");
    return d;
  }
  if (top.has("client")) top.fail("client", "belongs to a scenario of kind http");
  if (!top.has("stream") || !top.raw("stream").is_array() || top.raw("stream").empty())
    top.fail("stream", "must be a non-empty array of event numbers (or {\"event\": n, \"phase\": p})");
  const auto& stream = top.raw("stream");
  std::set<int> sent;
  for (size_t i = 0; i < stream.size(); ++i) {
    std::string path = fmt::format("default_schedule.stream[{}]", i);
    const auto& e = stream[i];
    StreamEntry se;
    if (e.is_number_integer()) {
      se.event = e.get<int>();
    } else if (e.is_object()) {
      FieldReader r(e, what, path);
      r.onlyKnown({"event", "phase"});
      se.event = static_cast<int>(*r.integer("event", true));
      se.phase = static_cast<int>(r.integer("phase", false).value_or(1));
      if (se.phase < 1) r.fail("phase", "must be an integer >= 1");
    } else {
      fieldError(what, path, "must be an event number or {\"event\": n, \"phase\": p}");
    }
    if (se.event < 1 || se.event > static_cast<int>(d.events.size()))
      fieldError(what, path, fmt::format("no event {} (events are numbered 1 to {})", se.event, d.events.size()));
    if (!d.stream.empty() && se.phase < d.stream.back().phase)
      fieldError(what, path, "phases must not decrease along the stream");
    sent.insert(se.event);
    d.stream.push_back(se);
  }
  for (const auto& ev : d.events) {
    if (!sent.count(ev.n))
      fieldError(what, "default_schedule.stream", fmt::format("event {} is never sent", ev.n));
  }
  return d;
}

} // namespace detail

void completeEvents(const Scenario& s, std::vector<Event>& events) {
  std::vector<size_t> order(events.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return events[a].n < events[b].n; });
  std::map<std::string, std::map<std::string, int>> versions; // field -> value of `of` -> last version
  for (size_t idx : order) {
    Event& ev = events[idx];
    auto bad = [&](const std::string& field, const std::string& why) {
      return UsageError(fmt::format("scenario {}: event {}: field '{}': {}", s.name, ev.n, field, why));
    };
    for (const auto& [name, value] : ev.fields) {
      if (!s.fieldGen(name)) throw bad(name, fmt::format("is not a field (fields: {})", detail::fieldNames(s.fields)));
    }
    const bool poison = s.isPoison(ev.fields); // its poison values are out of range on purpose
    for (const auto& f : s.fields) {
      if (f.gen == "uuid") continue;
      if (detail::drawn(f)) {
        auto it = ev.fields.find(f.name);
        if (it == ev.fields.end()) throw bad(f.name, fmt::format("is missing (gen {})", f.gen));
        std::string why = detail::badDrawnValue(f, it->second, s.keys);
        if (!why.empty() && !(poison && s.poison->fields.count(f.name))) throw bad(f.name, why);
      } else if (f.gen == "seq") {
        ev.fields[f.name] = std::to_string(ev.n);
      } else if (f.gen == "const") {
        ev.fields[f.name] = f.value;
      } else if (f.gen == "version" || f.gen == "map") {
        auto of = ev.fields.find(f.of);
        if (of == ev.fields.end()) throw bad(f.name, fmt::format("field '{}' it depends on is missing", f.of));
        if (f.gen == "version") {
          ev.fields[f.name] = std::to_string(++versions[f.name][of->second]);
        } else {
          auto it = f.map.find(of->second);
          if (it == f.map.end() && poison && s.poison->fields.count(f.of)) { // a poison key maps to nothing
            ev.fields[f.name] = "";
            continue;
          }
          if (it == f.map.end()) throw bad(f.name, fmt::format("no map entry for '{}'", of->second));
          ev.fields[f.name] = it->second;
        }
      }
    }
  }
}

Schedule defaultSchedule(const Scenario& s) {
  Schedule sch;
  sch.scenario = s.name;
  sch.events = s.default_schedule.events;
  sch.stream = s.default_schedule.stream;
  sch.client = s.default_schedule.client;
  completeEvents(s, sch.events);
  return sch;
}

std::string freshUuid() {
  thread_local std::mt19937_64 rng = [] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }();
  uint64_t hi = rng(), lo = rng();
  hi = (hi & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL; // version 4
  lo = (lo & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL; // variant 10xx
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xFFFF, hi & 0xFFFF, lo >> 48,
                     lo & 0xFFFFFFFFFFFFULL);
}

} // namespace idem
