#include "scenario/scenario.h"

#include "core/error.h"
#include "core/json_file.h"
#include "plan/fault_kind.h"
#include "scenario/json_fields.h"
#include "scenario/scenario_parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <set>

namespace idem {

namespace {

namespace fs = std::filesystem;

bool plainName(const std::string& s) {
  static const std::regex re("[A-Za-z0-9][A-Za-z0-9._-]*");
  return std::regex_match(s, re);
}

bool tableName(const std::string& s) {
  static const std::regex re("[A-Za-z_][A-Za-z0-9_$]*(\\.[A-Za-z_][A-Za-z0-9_$]*)?");
  return std::regex_match(s, re);
}

std::vector<std::string> knownScenarios(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".json") names.push_back(it->path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace

const FieldGen* Scenario::fieldGen(const std::string& n) const {
  for (const auto& f : fields) {
    if (f.name == n) return &f;
  }
  return nullptr;
}

std::string Scenario::idField() const {
  for (const auto& f : fields) {
    if (f.gen == "uuid") return f.name;
  }
  return "event_id";
}

Scenario scenarioFromJson(const nlohmann::json& j, const std::string& what) {
  detail::FieldReader r(j, what, "");
  r.onlyKnown({"name", "description", "kind", "http", "tables", "keys", "fields", "default_schedule", "invariants",
               "retry_window_ms", "prune", "poison", "sink"});
  Scenario s;
  s.name = *r.str("name", true);
  if (!plainName(s.name)) r.fail("name", fmt::format("'{}' must be letters, digits, '.', '_' or '-'", s.name));
  s.description = r.str("description", false, false).value_or("");
  if (r.has("kind")) s.kind = r.oneOf("kind", {"consumer", "http"});

  if (!r.has("tables")) r.fail("tables", "is required");
  detail::FieldReader t(r.raw("tables"), what, "tables");
  t.onlyKnown({"create", "initial", "names"});
  s.create_sql = *t.text("create", true);
  s.initial_sql = t.text("initial", false).value_or("");
  s.tables = *t.strings("names", true, true);
  for (size_t i = 0; i < s.tables.size(); ++i) {
    if (!tableName(s.tables[i]))
      t.fail(fmt::format("names[{}]", i), fmt::format("'{}' is not a table name (name or schema.name)", s.tables[i]));
  }

  if (r.has("keys")) {
    s.keys = *r.strings("keys", true, true);
    std::set<std::string> seen;
    for (size_t i = 0; i < s.keys.size(); ++i) {
      if (s.keys[i].empty()) detail::fieldError(what, fmt::format("keys[{}]", i), "must be a non-empty string");
      if (!seen.insert(s.keys[i]).second)
        detail::fieldError(what, fmt::format("keys[{}]", i), fmt::format("'{}' appears twice", s.keys[i]));
    }
  }
  if (!r.has("fields")) r.fail("fields", "is required");
  s.fields = detail::parseFields(r.raw("fields"), what, s.keys);
  if (s.kind == "http") {
    if (!r.has("http")) r.fail("http", "is required for a scenario of kind http");
    s.http = detail::parseHttpSpec(r.raw("http"), what, s);
  } else if (r.has("http")) {
    r.fail("http", "belongs to a scenario of kind http (add \"kind\": \"http\")");
  }
  if (s.kind == "http" && r.has("invariants") && !(r.raw("invariants").is_array() && r.raw("invariants").empty()))
    r.fail("invariants", "an HTTP scenario's invariants are fixed (docs/http-contract.md); its SQL goes in http.effects "
                         "and http.ledger");
  if (!r.has("invariants") && s.kind != "http") r.fail("invariants", "is required");
  if (s.kind != "http") s.invariants = detail::parseInvariants(r.raw("invariants"), what, s);
  if (r.has("retry_window_ms")) {
    s.retryWindowMs = *r.integer("retry_window_ms", true);
    if (*s.retryWindowMs < 1 || *s.retryWindowMs > kMaxAgeMs)
      r.fail("retry_window_ms", fmt::format("{} is not from 1 to {} (ms)", *s.retryWindowMs, kMaxAgeMs));
  }
  if (r.has("prune")) {
    s.prune = *r.text("prune", true);
    // One parameter, the retention left: the statement is run as it stands with $1 in place.
    if (s.prune.find("$1") == std::string::npos || s.prune.find("$2") != std::string::npos)
      r.fail("prune", "must use $1 (the retention, an interval) and no other parameter");
  }
  if (r.has("poison")) s.poison = detail::parsePoison(r.raw("poison"), what, s);
  if (r.has("sink")) s.sink = detail::parseSink(r.raw("sink"), what, s);
  if (!r.has("default_schedule")) r.fail("default_schedule", "is required");
  s.default_schedule = detail::parseDefaultSchedule(r.raw("default_schedule"), what, s);
  if (s.poison) detail::checkPoisonEvents(*s.poison, what, s.default_schedule.events.size());
  try {
    completeEvents(s, s.default_schedule.events);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: field 'default_schedule.events': {}", what, e.what()));
  }
  return s;
}

Scenario loadScenario(const std::string& nameOrFile, const fs::path& scenariosDir) {
  bool bare = nameOrFile.find('/') == std::string::npos && fs::path(nameOrFile).extension() != ".json";
  fs::path file = bare ? scenariosDir / (nameOrFile + ".json") : fs::path(nameOrFile);
  std::error_code ec;
  if (bare && !fs::is_regular_file(file, ec)) {
    auto known = knownScenarios(scenariosDir);
    throw UsageError(fmt::format("unknown scenario '{}' (known: {})", nameOrFile,
                                 known.empty() ? std::string("none in " + scenariosDir.string()) : detail::joinNames(known)));
  }
  const std::string what = file.string();
  Scenario s = scenarioFromJson(readJsonFile(file, what), what);
  if (bare && s.name != nameOrFile)
    detail::fieldError(what, "name", fmt::format("'{}' does not match the file name '{}'", s.name, nameOrFile));
  s.file = fs::absolute(file).lexically_normal();
  return s;
}

} // namespace idem
