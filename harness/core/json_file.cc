// Strict JSON files.
#include "core/json_file.h"

#include "core/error.h"

#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

namespace idem {

namespace fs = std::filesystem;

nlohmann::json parseJsonStrict(const std::string& text, const std::string& what) {
  using Event = nlohmann::json::parse_event_t;
  std::vector<std::set<std::string>> keys; // of each object being parsed, innermost last
  auto check = [&](int, Event ev, nlohmann::json& parsed) {
    if (ev == Event::object_start) {
      keys.emplace_back();
    } else if (ev == Event::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (ev == Event::key || (ev == Event::value && parsed.is_string())) {
      const auto& s = parsed.get_ref<const std::string&>();
      if (s.find('\0') != std::string::npos)
        throw UsageError(fmt::format("{}: a string holds a NUL byte (\\u0000)", what));
      if (ev == Event::key && !keys.empty() && !keys.back().insert(s).second)
        throw UsageError(fmt::format("{}: key '{}' appears twice in one object", what, s));
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text, check);
  } catch (const nlohmann::json::exception& e) { // parse_error, and out_of_range for a number like 1e999
    std::string msg = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix; keep "parse error at line L, column C: ...".
    // (Found by tests/fuzz/parsers_fuzz.cc: "1e999" threw out_of_range past this handler.)
    auto close = msg.find("] ");
    if (msg.rfind("[json.exception", 0) == 0 && close != std::string::npos) msg = msg.substr(close + 2);
    throw UsageError(fmt::format("{}: invalid JSON: {}", what, msg));
  }
}

nlohmann::json readJsonFile(const fs::path& file, const std::string& what, uintmax_t maxBytes) {
  std::error_code ec;
  if (fs::is_directory(file, ec)) throw UsageError(fmt::format("{}: is a folder, not a file", what));
  if (!fs::is_regular_file(file, ec)) throw UsageError(fmt::format("{}: no such file", what));
  uintmax_t size = fs::file_size(file, ec);
  if (!ec && size > maxBytes)
    throw UsageError(fmt::format("{}: {} bytes, more than the {} such a file may hold", what, size, maxBytes));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UsageError(fmt::format("{}: cannot be read", what));
  std::stringstream buf;
  buf << in.rdbuf();
  return parseJsonStrict(buf.str(), what);
}

} // namespace idem
