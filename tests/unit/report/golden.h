#pragma once
// Golden files: a report normalised (times, pids, ports, UUIDs, stream entry ids and temp paths replaced
// by placeholders such as {uuid}, {entry3}, {tmp}, {port}: safe in JSON, XML and HTML) and compared with a file under tests/golden/. IDEM_UPDATE_GOLDEN=1 rewrites the files
// instead (review the diff before committing it). Header-only: used by unit and integration tests.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

namespace idem::testing {

class Normaliser {
public:
  using json = nlohmann::json;

  /// `paths`: prefixes (a temp report dir, the repository) replaced by "{name}".
  explicit Normaliser(std::map<std::string, std::string> paths = {}) : paths_(std::move(paths)) {}

  /// Members dropped wherever they occur (e.g. "history" of runs whose timing varies).
  Normaliser& drop(const std::string& key) {
    drops_.insert(key);
    return *this;
  }

  json operator()(const json& j) {
    if (j.is_object()) {
      json out = json::object();
      for (const auto& [k, v] : j.items()) {
        if (drops_.count(k)) continue;
        if (volatileKey(k) && v.is_number()) out[k] = 0;
        else out[k] = (*this)(v);
      }
      return out;
    }
    if (j.is_array()) {
      json out = json::array();
      for (const auto& v : j) out.push_back((*this)(v));
      return out;
    }
    if (j.is_string()) return text(j.get<std::string>());
    return j;
  }

  /// `s` with the volatile parts replaced: paths, UUIDs, entry ids (numbered in order of first sight), temp
  /// folders, ports, pids (golden.cc: the one translation unit that compiles <regex>).
  std::string text(std::string s);

private:
  static bool volatileKey(const std::string& k) {
    static const std::set<std::string> keys = {"time_us", "t_req_us", "duration_us", "total_ms", "wall_us", "pid",
                                               "msgs_per_s", "deadline_ms", "stall_ms", "grace_ms", "workers"};
    return keys.count(k) > 0;
  }
  std::map<std::string, std::string> paths_;
  std::set<std::string> drops_;
  std::map<std::string, size_t> entries_;
};

std::string readFile(const std::filesystem::path& p);

/// How many times `needle` occurs in `s` (not overlapping).
inline size_t occurrences(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = 0; (pos = s.find(needle, pos)) != std::string::npos; pos += needle.size()) ++n;
  return n;
}

/// "" when `actual` equals tests/golden/<name>, else a message naming the file (and how to update it).
/// With IDEM_UPDATE_GOLDEN=1 the file is rewritten and "" returned.
std::string compareGolden(const std::string& name, const std::string& actual);

inline std::string compareGolden(const std::string& name, const nlohmann::json& actual) {
  return compareGolden(name, actual.dump(2) + "\n");
}

} // namespace idem::testing
