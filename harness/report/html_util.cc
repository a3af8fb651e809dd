#include "report/html_util.h"

#include <fmt/format.h>

namespace idem::html {

namespace {

/// Length of the UTF-8 sequence starting at s[i], or 0 when it is not a valid one.
size_t utf8Length(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  auto c1 = n > 1 ? static_cast<unsigned char>(s[i + 1]) : 0;
  if (n == 2 && c < 0xC2) return 0;                                  // overlong
  if (n == 3 && ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0))) return 0; // overlong, surrogate
  if (n == 4 && ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90) || c > 0xF4)) return 0;
  if (n == 3 && c == 0xEF && c1 == 0xBF && (static_cast<unsigned char>(s[i + 2]) & 0xFE) == 0xBE) return 0; // U+FFFE/F
  return n;
}

} // namespace

std::string cleanUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8Length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    auto c = static_cast<unsigned char>(s[i]);
    if (n == 1 && (c < 0x20 || c == 0x7F) && c != '\t' && c != '\n') {
      ++i;
      continue;
    }
    out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

std::string esc(std::string_view raw) {
  std::string s = cleanUtf8(raw);
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (char c : s) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default: out += c;
    }
  }
  return out;
}

std::string cut(std::string_view raw, size_t max) {
  std::string s = cleanUtf8(raw);
  size_t chars = 0;
  for (size_t i = 0; i < s.size(); ++chars) {
    if (chars == max) return s.substr(0, i) + "…";
    size_t n = utf8Length(s, i);
    i += n ? n : 1;
  }
  return s;
}

std::string show(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string str(const json& j, const char* key, const std::string& def) {
  if (!j.is_object()) return def;
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : def;
}

int64_t num(const json& j, const char* key, int64_t def) {
  if (!j.is_object()) return def;
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<int64_t>() : def;
}

const json& arr(const json& j, const char* key) {
  static const json empty = json::array();
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  return it != j.end() && (it->is_array() || it->is_object()) ? *it : empty;
}

std::string verdictClass(const std::string& verdict) {
  if (verdict == "pass" || verdict == "fail" || verdict == "error") return verdict;
  if (verdict == "n/a" || verdict.empty()) return "na";
  return "unknown";
}

std::string safeHref(const std::string& path) {
  if (path.empty() || path[0] == '/' || path[0] == '.' || path.find("..") != std::string::npos) return "";
  for (char c : path)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '/' && c != '.' && c != '_' && c != '-') return "";
  return path;
}

Anchors anchorsOf(const json& report) {
  Anchors out;
  const auto& runs = arr(report, "runs");
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].is_object() && runs[i].contains("history")) out.emplace(str(runs[i], "id"), fmt::format("run-{}", i));
  }
  return out;
}

std::string linkTo(const Anchors& anchors, const std::string& id, const std::string& text) {
  auto it = anchors.find(id);
  if (it == anchors.end()) return esc(text);
  return fmt::format("<a href=\"#{}\">{}</a>", it->second, esc(text));
}

} // namespace idem::html
