// Strict JSON files.
#include "core/json_file.h"

#include "core/error.h"

#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <vector>

namespace idem {

namespace fs = std::filesystem;

namespace {

/// The strict checks as a parser callback around `filter` (none: keep everything). Keys are tracked per
/// depth, not per object start and end: inside a discarded container no end is reported.
nlohmann::json::parser_callback_t strictCallback(const std::string& what, const JsonFilter* filter) {
  using Event = nlohmann::json::parse_event_t;
  auto keys = std::make_shared<std::vector<std::set<std::string>>>(); // [depth]: the keys of the object there
  return [what, filter, keys](int depth, Event ev, nlohmann::json& parsed) {
    const auto d = static_cast<size_t>(depth);
    if (ev == Event::object_start) {
      keys->resize(d + 1);
      (*keys)[d].clear();
    } else if (ev == Event::key || (ev == Event::value && parsed.is_string())) {
      const auto& s = parsed.get_ref<const std::string&>();
      if (s.find('\0') != std::string::npos)
        throw UsageError(fmt::format("{}: a string holds a NUL byte (\\u0000)", what));
      if (ev == Event::key && d >= 1 && d <= keys->size() && !(*keys)[d - 1].insert(s).second)
        throw UsageError(fmt::format("{}: key '{}' appears twice in one object", what, s));
    }
    return filter ? (*filter)(depth, ev, parsed) : true;
  };
}

/// nlohmann's parse error as one line naming `what`.
UsageError invalidJson(const nlohmann::json::exception& e, const std::string& what) {
  std::string msg = e.what();
  // Drop nlohmann's "[json.exception.parse_error.101] " prefix; keep "parse error at line L, column C: ...".
  // (Found by tests/fuzz/parsers_fuzz.cc: "1e999" threw out_of_range past this handler.)
  auto close = msg.find("] ");
  if (msg.rfind("[json.exception", 0) == 0 && close != std::string::npos) msg = msg.substr(close + 2);
  return UsageError(fmt::format("{}: invalid JSON: {}", what, msg));
}

/// Opens `file` after the checks of readJsonFile (a file, not a folder, at most maxBytes).
std::ifstream openJson(const fs::path& file, const std::string& what, uintmax_t maxBytes) {
  std::error_code ec;
  if (fs::is_directory(file, ec)) throw UsageError(fmt::format("{}: is a folder, not a file", what));
  if (!fs::is_regular_file(file, ec)) throw UsageError(fmt::format("{}: no such file", what));
  uintmax_t size = fs::file_size(file, ec);
  if (!ec && size > maxBytes)
    throw UsageError(fmt::format("{}: {} bytes, more than the {} such a file may hold", what, size, maxBytes));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UsageError(fmt::format("{}: cannot be read", what));
  return in;
}

} // namespace

nlohmann::json parseJsonStrict(const std::string& text, const std::string& what) {
  try {
    return nlohmann::json::parse(text, strictCallback(what, nullptr));
  } catch (const nlohmann::json::exception& e) { // parse_error, and out_of_range for a number like 1e999
    throw invalidJson(e, what);
  }
}

nlohmann::json readJsonFile(const fs::path& file, const std::string& what, uintmax_t maxBytes) {
  std::ifstream in = openJson(file, what, maxBytes);
  std::stringstream buf;
  buf << in.rdbuf();
  return parseJsonStrict(buf.str(), what);
}

nlohmann::json readJsonFileFiltered(const fs::path& file, const std::string& what, uintmax_t maxBytes,
                                    const JsonFilter& filter) {
  std::ifstream in = openJson(file, what, maxBytes);
  try {
    return nlohmann::json::parse(in, strictCallback(what, &filter));
  } catch (const nlohmann::json::exception& e) {
    throw invalidJson(e, what);
  }
}

} // namespace idem
