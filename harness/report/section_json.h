#pragma once
/// What the typed sections' to_json and from_json share (sweep, shard and check_section.cc): a member
/// that may be null or absent.
#include <nlohmann/json.hpp>

#include <optional>

namespace idem::section_json {

/// The value, or null when there is none.
template <class T>
nlohmann::json orNull(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

/// Member `key` of `j`; none when it is absent or null. Throws nlohmann::json::exception when it has
/// another type.
template <class T>
std::optional<T> optionalOf(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return j.at(key).get<T>();
}

} // namespace idem::section_json
