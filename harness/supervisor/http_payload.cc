#include "supervisor/http_payload.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

namespace idem {

std::string formEncode(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '*' || c == '-' || c == '.' || c == '_') out += static_cast<char>(c);
    else if (c == ' ') out += '+';
    else out += fmt::format("%{:02X}", c);
  }
  return out;
}

const char* payloadContentType(const HttpSpec& h) {
  return h.body == "form" ? "application/x-www-form-urlencoded" : "application/json";
}

std::string encodePayload(const Scenario& s, const std::map<std::string, std::string>& fields, bool reordered) {
  const HttpSpec& h = *s.http;
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& g : s.fields)
    if (auto it = fields.find(g.name); it != fields.end()) pairs.emplace_back(g.name, it->second);
  if (reordered) std::reverse(pairs.begin(), pairs.end());
  if (h.body == "form") {
    std::string out;
    for (const auto& [name, value] : pairs) out += (out.empty() ? "" : "&") + formEncode(name) + "=" + formEncode(value);
    return out;
  }
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, value] : pairs) {
    if (std::find(h.numbers.begin(), h.numbers.end(), name) != h.numbers.end()) j[name] = std::stoll(value);
    else j[name] = value;
  }
  return j.dump();
}

} // namespace idem
