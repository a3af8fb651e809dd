#pragma once
// A validator for the subset of JSON Schema (draft 2020-12) that reports/report.schema.json uses: type
// (a name or a list), enum, const, minimum, required, properties, additionalProperties (false or a
// schema), items (a schema), allOf, if/then, and $ref to "#/$defs/NAME". Anything else in a schema is an
// error, so that the schema cannot silently use a keyword this validator ignores. Header-only: the unit
// tests and the integration tests' support.cc both use it.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace idem::testing {

class SchemaValidator {
public:
  using json = nlohmann::json;

  explicit SchemaValidator(json schema) : root_(std::move(schema)) {}

  /// Every error of `doc`, each as "/runs/0/verdict: ...". Empty: valid.
  std::vector<std::string> errors(const json& doc) const {
    std::vector<std::string> out;
    check(root_, doc, "", out);
    return out;
  }

private:
  static std::string typeOf(const json& v) {
    if (v.is_null()) return "null";
    if (v.is_boolean()) return "boolean";
    if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
    if (v.is_number()) return "number";
    if (v.is_string()) return "string";
    if (v.is_array()) return "array";
    return "object";
  }

  static bool hasType(const json& v, const std::string& t) {
    std::string mine = typeOf(v);
    return mine == t || (t == "number" && mine == "integer");
  }

  const json& resolve(const std::string& ref) const {
    const std::string prefix = "#/$defs/";
    if (ref.rfind(prefix, 0) != 0) throw std::runtime_error("schema: unsupported $ref " + ref);
    const json& defs = root_.at("$defs");
    auto it = defs.find(ref.substr(prefix.size()));
    if (it == defs.end()) throw std::runtime_error("schema: no definition " + ref);
    return *it;
  }

  bool valid(const json& schema, const json& doc) const {
    std::vector<std::string> e;
    check(schema, doc, "", e);
    return e.empty();
  }

  void check(const json& schema, const json& doc, const std::string& at, std::vector<std::string>& out) const {
    static const std::set<std::string> known = {"$schema", "$id", "title", "description", "type", "enum", "const",
                                                "minimum", "required", "properties", "additionalProperties", "items",
                                                "allOf", "if", "then", "$ref", "$defs"};
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) out.push_back(at + ": not allowed here");
      return;
    }
    for (const auto& [k, v] : schema.items())
      if (!known.count(k)) throw std::runtime_error("schema: keyword '" + k + "' is not supported (at " + at + ")");
    std::string where = at.empty() ? "/" : at;
    if (schema.contains("$ref")) check(resolve(schema["$ref"]), doc, at, out);
    if (schema.contains("type")) {
      const json& t = schema["type"];
      bool ok = false;
      if (t.is_string()) ok = hasType(doc, t);
      else
        for (const auto& x : t) ok = ok || hasType(doc, x);
      if (!ok) {
        out.push_back(where + ": is " + typeOf(doc) + ", expected " + t.dump());
        return;
      }
    }
    if (schema.contains("const") && doc != schema["const"])
      out.push_back(where + ": is " + doc.dump() + ", expected " + schema["const"].dump());
    if (schema.contains("enum")) {
      bool ok = false;
      for (const auto& x : schema["enum"]) ok = ok || doc == x;
      if (!ok) out.push_back(where + ": " + doc.dump() + " is not one of " + schema["enum"].dump());
    }
    if (schema.contains("minimum") && doc.is_number() && doc.get<double>() < schema["minimum"].get<double>())
      out.push_back(where + ": " + doc.dump() + " is below " + schema["minimum"].dump());
    if (schema.contains("allOf"))
      for (const auto& s : schema["allOf"]) check(s, doc, at, out);
    if (schema.contains("if") && valid(schema["if"], doc) && schema.contains("then")) check(schema["then"], doc, at, out);
    if (doc.is_object()) {
      if (schema.contains("required"))
        for (const auto& r : schema["required"])
          if (!doc.contains(r.get<std::string>())) out.push_back(where + ": missing member '" + r.get<std::string>() + "'");
      const json empty = json::object();
      const json& props = schema.contains("properties") ? schema["properties"] : empty;
      for (const auto& [k, v] : doc.items()) {
        if (props.contains(k)) check(props[k], v, at + "/" + k, out);
        else if (schema.contains("additionalProperties")) {
          const json& extra = schema["additionalProperties"];
          if (extra.is_boolean() && !extra.get<bool>()) out.push_back(where + ": member '" + k + "' is not in the schema");
          else if (extra.is_object()) check(extra, v, at + "/" + k, out);
        }
      }
    }
    if (doc.is_array() && schema.contains("items"))
      for (size_t i = 0; i < doc.size(); ++i) check(schema["items"], doc[i], at + "/" + std::to_string(i), out);
  }

  json root_;
};

/// reports/report.schema.json of the repository.
inline const nlohmann::json& reportSchema() {
  static const nlohmann::json schema = [] {
    std::ifstream in(std::filesystem::path(IDEM_SOURCE_DIR) / "reports" / "report.schema.json");
    return nlohmann::json::parse(in);
  }();
  return schema;
}

/// Throws std::runtime_error listing (the first 20) schema errors of a report.json document.
inline void requireValidReport(const nlohmann::json& report, const std::string& what) {
  auto errors = SchemaValidator(reportSchema()).errors(report);
  if (errors.empty()) return;
  std::string text = what + " does not match reports/report.schema.json:";
  for (size_t i = 0; i < errors.size() && i < 20; ++i) text += "\n  " + errors[i];
  if (errors.size() > 20) text += "\n  ... " + std::to_string(errors.size() - 20) + " more";
  throw std::runtime_error(text);
}

} // namespace idem::testing
