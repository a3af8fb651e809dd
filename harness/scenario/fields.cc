#include "core/error.h"
#include "scenario/json_fields.h"
#include "scenario/scenario_parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace idem::detail {

namespace {

const std::vector<std::string> kGens = {"seq", "uuid", "key", "int", "pick", "version", "map", "const"};

std::vector<std::string> fieldMembers(const std::string& gen) {
  std::vector<std::string> m = {"name", "gen"};
  if (gen == "int") m.insert(m.end(), {"min", "max"});
  if (gen == "pick") m.push_back("values");
  if (gen == "version") m.push_back("of");
  if (gen == "map") m.insert(m.end(), {"of", "map"});
  if (gen == "const") m.push_back("value");
  return m;
}

FieldGen parseOne(const FieldReader& r, const std::vector<FieldGen>& earlier, const std::vector<std::string>& keys) {
  FieldGen f;
  f.name = r.uniqueName("name", earlier);
  f.gen = r.oneOf("gen", kGens);
  r.onlyKnown(fieldMembers(f.gen));
  if (f.gen == "key" && keys.empty()) r.fail("gen", "'key' needs a non-empty top-level 'keys' array");
  if (f.gen == "int") {
    f.min = *r.integer("min", true);
    f.max = *r.integer("max", true);
    if (f.min > f.max) r.fail("max", fmt::format("{} is less than min {}", f.max, f.min));
  }
  if (f.gen == "pick") {
    f.values = *r.strings("values", true, true);
    std::set<std::string> seen;
    for (const auto& v : f.values) {
      if (!seen.insert(v).second) r.fail("values", fmt::format("'{}' appears twice", v));
    }
  }
  if (f.gen == "const") f.value = *r.str("value", true, false);
  if (f.gen == "version" || f.gen == "map") {
    f.of = *r.str("of", true);
    auto it = std::find_if(earlier.begin(), earlier.end(), [&](const FieldGen& e) { return e.name == f.of; });
    if (it == earlier.end())
      r.fail("of", fmt::format("'{}' is not a field defined before '{}' (earlier fields: {})", f.of, f.name,
                               earlier.empty() ? std::string("none") : fieldNames(earlier)));
    if (f.gen == "map") {
      if (!r.has("map")) r.fail("map", "must be a non-empty object of strings");
      const auto& m = r.raw("map");
      if (!m.is_object() || m.empty()) r.fail("map", "must be a non-empty object of strings");
      for (auto mi = m.begin(); mi != m.end(); ++mi) {
        if (!mi.value().is_string()) r.fail("map." + mi.key(), "must be a string");
        f.map[mi.key()] = mi.value().get<std::string>();
      }
      if (auto domain = possibleValues(*it, keys)) {
        for (const auto& v : *domain) {
          if (!f.map.count(v)) r.fail("map", fmt::format("no entry for '{}' (a value of field '{}')", v, f.of));
        }
      }
    }
  }
  return f;
}

} // namespace

std::optional<int64_t> parseInteger(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const char* b = text.data();
  const char* e = text.data() + text.size();
  if (*b == '+') ++b;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e || b == e) return std::nullopt;
  return v;
}

std::string fieldNames(const std::vector<FieldGen>& fields) {
  std::vector<std::string> names;
  for (const auto& f : fields) names.push_back(f.name);
  return joinNames(names);
}

std::optional<std::set<std::string>> possibleValues(const FieldGen& f, const std::vector<std::string>& keys) {
  if (f.gen == "key") return std::set<std::string>(keys.begin(), keys.end());
  if (f.gen == "pick") return std::set<std::string>(f.values.begin(), f.values.end());
  if (f.gen == "const") return std::set<std::string>{f.value};
  if (f.gen == "map") {
    std::set<std::string> out;
    for (const auto& [k, v] : f.map) out.insert(v);
    return out;
  }
  return std::nullopt;
}

bool integerValued(const FieldGen& f, const std::vector<std::string>& keys) {
  if (f.gen == "int" || f.gen == "seq" || f.gen == "version") return true;
  auto values = possibleValues(f, keys);
  if (!values) return false;
  return std::all_of(values->begin(), values->end(), [](const std::string& v) { return parseInteger(v).has_value(); });
}

std::vector<FieldGen> parseFields(const nlohmann::json& j, const std::string& what,
                                  const std::vector<std::string>& keys) {
  if (!j.is_array() || j.empty()) fieldError(what, "fields", "must be a non-empty array of field generators");
  std::vector<FieldGen> out;
  for (size_t i = 0; i < j.size(); ++i) {
    FieldReader r(j[i], what, fmt::format("fields[{}]", i));
    out.push_back(parseOne(r, out, keys));
  }
  auto count = [&](const char* gen) {
    return std::count_if(out.begin(), out.end(), [&](const FieldGen& f) { return f.gen == gen; });
  };
  if (count("uuid") != 1)
    fieldError(what, "fields", fmt::format("exactly one field must have gen 'uuid' (the event's identity); found {}",
                                           count("uuid")));
  if (count("seq") > 1) fieldError(what, "fields", "at most one field may have gen 'seq'");
  return out;
}

} // namespace idem::detail
