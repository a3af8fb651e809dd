#pragma once
/// Internal functions for reading user-written JSON files (scenarios, target manifests) with errors that
/// name the file and the field: "scenarios/x.json: field 'invariants[0].kind': ...". Not a public API.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace idem::detail {


/// Reads the fields of one JSON object, naming each field by its path for error messages.
class FieldReader {
public:
  /// `what` names the file; `path` is the object's own path ("" at top level, "invariants[0]").
  FieldReader(const nlohmann::json& obj, std::string what, std::string path);

  /// The full path of a member: "invariants[0].kind".
  std::string at(const std::string& key) const;
  /// Throws UsageError "<what>: field '<path>': <why>".
  [[noreturn]] void fail(const std::string& key, const std::string& why) const;
  bool has(const std::string& key) const;
  const nlohmann::json& raw(const std::string& key) const;

  /// A string; nullopt when absent and not required. Empty strings are rejected when nonEmpty.
  std::optional<std::string> str(const std::string& key, bool required, bool nonEmpty = true) const;
  /// A string, or an array of strings joined by newlines (for SQL written over several lines).
  std::optional<std::string> text(const std::string& key, bool required) const;
  /// An array of non-empty strings; nullopt when absent and not required.
  std::optional<std::vector<std::string>> strings(const std::string& key, bool required, bool nonEmpty) const;
  std::optional<int64_t> integer(const std::string& key, bool required) const;
  /// A required string that is one of `allowed`: "'x' is not one of a, b, c".
  std::string oneOf(const std::string& key, const std::vector<std::string>& allowed) const;
  /// The required string `key` ("name"), which no element of `earlier` has: "'x' is defined twice".
  template <class T>
  std::string uniqueName(const std::string& key, const std::vector<T>& earlier) const {
    std::string name = *str(key, true);
    for (const auto& e : earlier)
      if (e.name == name) fail(key, "'" + name + "' is defined twice");
    return name;
  }
  /// Rejects members not in `known` (typos): "unknown field (known: a, b, c)".
  void onlyKnown(const std::vector<std::string>& known) const;

private:
  const nlohmann::json& obj_;
  std::string what_;
  std::string path_;
};

/// Throws UsageError "<what>: field '<field>': <why>".
[[noreturn]] void fieldError(const std::string& what, const std::string& field, const std::string& why);

/// "a, b, c"
std::string joinNames(const std::vector<std::string>& names);

} // namespace idem::detail
