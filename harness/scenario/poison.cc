#include "core/error.h"
#include "scenario/json_fields.h"
#include "scenario/scenario_parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace idem {

bool Scenario::isPoison(const std::map<std::string, std::string>& fields) const {
  if (!poison || poison->fields.empty()) return false;
  for (const auto& [name, value] : poison->fields) {
    auto it = fields.find(name);
    if (it == fields.end() || it->second != value) return false;
  }
  return true;
}

void poisonGenerated(const Scenario& s, std::vector<Event>& events) {
  if (!s.poison || s.poison->every < 1) return;
  for (auto& e : events)
    if (e.n % s.poison->every == 0)
      for (const auto& [name, value] : s.poison->fields) e.fields[name] = value;
}

namespace detail {

namespace {

/// Whether `value` is one the drawn field `f` never draws (outside its range or its set of values).
bool neverDrawn(const FieldGen& f, const std::string& value, const std::vector<std::string>& keys) {
  if (f.gen == "key") return std::find(keys.begin(), keys.end(), value) == keys.end();
  if (f.gen == "pick") return std::find(f.values.begin(), f.values.end(), value) == f.values.end();
  auto v = parseInteger(value);
  return !v || *v < f.min || *v > f.max;
}

bool tableName(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; });
}

} // namespace

PoisonSpec parsePoison(const nlohmann::json& j, const std::string& what, const Scenario& s) {
  FieldReader r(j, what, "poison");
  if (!j.is_object()) fieldError(what, "poison", "must be an object (events, fields, dead_letter, max_deliveries)");
  r.onlyKnown({"events", "fields", "dead_letter", "max_deliveries", "every"});
  if (s.kind == "http") r.fail("events", "an HTTP scenario has no stream to poison");
  PoisonSpec p;
  if (!r.has("events") || !r.raw("events").is_array() || r.raw("events").empty())
    r.fail("events", "must be a non-empty array of event numbers of the default schedule");
  std::set<int> seen;
  const auto& events = r.raw("events");
  for (size_t i = 0; i < events.size(); ++i) {
    if (!events[i].is_number_integer() || events[i].get<int64_t>() < 1)
      r.fail(fmt::format("events[{}]", i), "must be an event number (1, 2, ...)");
    int n = events[i].get<int>();
    if (!seen.insert(n).second) r.fail(fmt::format("events[{}]", i), fmt::format("event {} appears twice", n));
    p.events.push_back(n);
  }
  if (!r.has("fields") || !r.raw("fields").is_object() || r.raw("fields").empty())
    r.fail("fields", "must be an object of the field values that make an event poison, e.g. {\"amount\": \"-500\"}");
  bool outside = false;
  for (const auto& [name, v] : r.raw("fields").items()) {
    const std::string path = "fields." + name;
    const FieldGen* f = s.fieldGen(name);
    if (!f) r.fail(path, fmt::format("is not a field (fields: {})", fieldNames(s.fields)));
    if (f->gen != "key" && f->gen != "int" && f->gen != "pick")
      r.fail(path, fmt::format("is {} (gen {}); a poison value goes in a drawn field (key, int, pick)",
                               f->gen == "uuid" ? "the event's id" : "computed", f->gen));
    std::string value;
    if (v.is_string()) value = v.get<std::string>();
    else if (v.is_number_integer()) value = std::to_string(v.get<int64_t>());
    else r.fail(path, "must be a string (or an integer)");
    outside = outside || neverDrawn(*f, value, s.keys);
    p.fields[name] = value;
  }
  if (!outside)
    r.fail("fields", "every value is one its generator draws: name at least one it never draws (an amount out of "
                     "range, a key not in keys), so that no ordinary event is poison by chance");
  if (!r.has("dead_letter") || !r.raw("dead_letter").is_object())
    r.fail("dead_letter", "is required: {\"stream\": NAME}, {\"queue\": NAME}, {\"topic\": NAME} or {\"table\": NAME}, "
                          "and optionally \"id\"");
  FieldReader d(r.raw("dead_letter"), what, "poison.dead_letter");
  d.onlyKnown({"stream", "queue", "topic", "table", "id"});
  if (d.has("stream") + d.has("queue") + d.has("topic") + d.has("table") != 1)
    d.fail("stream", "give exactly one of stream, queue, topic and table");
  for (const char* member : {"stream", "queue", "topic"}) {
    if (!d.has(member)) continue;
    std::string name = *d.str(member, true);
    if (!std::all_of(name.begin(), name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' || c == ':';
        }))
      d.fail(member, fmt::format("'{}' must be letters, digits, '_', '.', '-' or ':'", name));
    const std::string m = member;
    (m == "stream" ? p.deadLetterStream : m == "queue" ? p.deadLetterQueue : p.deadLetterTopic) = name;
  }
  if (d.has("table")) {
    p.deadLetterTable = *d.str("table", true);
    if (!tableName(p.deadLetterTable)) d.fail("table", fmt::format("'{}' is not a table name", p.deadLetterTable));
    if (std::find(s.tables.begin(), s.tables.end(), p.deadLetterTable) == s.tables.end())
      d.fail("table", fmt::format("'{}' is not in tables.names: idemproof empties it between runs", p.deadLetterTable));
  }
  p.deadLetterId = d.str("id", false).value_or(s.idField());
  if (!tableName(p.deadLetterId)) d.fail("id", fmt::format("'{}' is not a column or field name", p.deadLetterId));
  auto max = r.integer("max_deliveries", true);
  if (*max < 1 || *max > 1000) r.fail("max_deliveries", fmt::format("{} is not an integer in [1, 1000]", *max));
  p.maxDeliveries = static_cast<int>(*max);
  if (r.has("every")) {
    auto every = r.integer("every", true);
    if (*every < 1 || *every > 1000) r.fail("every", fmt::format("{} is not an integer in [1, 1000]", *every));
    p.every = static_cast<int>(*every);
  }
  return p;
}

void checkPoisonEvents(const PoisonSpec& p, const std::string& what, size_t events) {
  for (size_t i = 0; i < p.events.size(); ++i)
    if (p.events[i] > static_cast<int>(events))
      fieldError(what, fmt::format("poison.events[{}]", i),
                 fmt::format("no event {} (the default schedule's events are numbered 1 to {})", p.events[i], events));
}

} // namespace detail

} // namespace idem
