#include "scenario/json_fields.h"

#include "core/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace idem::detail {

void fieldError(const std::string& what, const std::string& field, const std::string& why) {
  throw UsageError(fmt::format("{}: field '{}': {}", what, field, why));
}

std::string joinNames(const std::vector<std::string>& names) { return fmt::format("{}", fmt::join(names, ", ")); }

FieldReader::FieldReader(const nlohmann::json& obj, std::string what, std::string path)
    : obj_(obj), what_(std::move(what)), path_(std::move(path)) {
  if (!obj_.is_object()) {
    if (path_.empty()) throw UsageError(fmt::format("{}: must be a JSON object", what_));
    fieldError(what_, path_, "must be an object");
  }
}

std::string FieldReader::at(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

void FieldReader::fail(const std::string& key, const std::string& why) const { fieldError(what_, at(key), why); }

bool FieldReader::has(const std::string& key) const { return obj_.contains(key); }

const nlohmann::json& FieldReader::raw(const std::string& key) const { return obj_.at(key); }

std::optional<std::string> FieldReader::str(const std::string& key, bool required, bool nonEmpty) const {
  if (!has(key)) {
    if (required) fail(key, "is required");
    return std::nullopt;
  }
  const auto& v = obj_.at(key);
  if (!v.is_string() || (nonEmpty && v.get<std::string>().empty()))
    fail(key, nonEmpty ? "must be a non-empty string" : "must be a string");
  const auto& text = v.get_ref<const std::string&>();
  for (unsigned char c : text)
    if (c < 0x20 && c != '\n' && c != '\t' && c != '\r') fail(key, fmt::format("holds the control character 0x{:02x}", c));
  return text;
}

std::optional<std::string> FieldReader::text(const std::string& key, bool required) const {
  if (has(key) && obj_.at(key).is_array()) {
    auto lines = strings(key, required, false);
    std::string out;
    for (const auto& l : *lines) out += l + "\n";
    if (out.find_first_not_of(" \t\n") == std::string::npos) fail(key, "must not be empty");
    return out;
  }
  if (has(key) && !obj_.at(key).is_string()) fail(key, "must be a string or an array of strings");
  return str(key, required, true);
}

std::optional<std::vector<std::string>> FieldReader::strings(const std::string& key, bool required,
                                                             bool nonEmpty) const {
  if (!has(key)) {
    if (required) fail(key, "is required");
    return std::nullopt;
  }
  const auto& v = obj_.at(key);
  const char* want = nonEmpty ? "must be a non-empty array of strings" : "must be an array of strings";
  if (!v.is_array() || (nonEmpty && v.empty())) fail(key, want);
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) fieldError(what_, fmt::format("{}[{}]", at(key), i), "must be a string");
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

std::optional<int64_t> FieldReader::integer(const std::string& key, bool required) const {
  if (!has(key)) {
    if (required) fail(key, "is required");
    return std::nullopt;
  }
  const auto& v = obj_.at(key);
  if (!v.is_number_integer()) fail(key, "must be an integer");
  return v.get<int64_t>();
}

std::string FieldReader::oneOf(const std::string& key, const std::vector<std::string>& allowed) const {
  std::string v = *str(key, true);
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
    fail(key, fmt::format("'{}' is not one of {}", v, joinNames(allowed)));
  return v;
}

void FieldReader::onlyKnown(const std::vector<std::string>& known) const {
  for (auto it = obj_.begin(); it != obj_.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) == known.end())
      fail(it.key(), fmt::format("unknown field (known: {})", joinNames(known)));
  }
}

} // namespace idem::detail
