#pragma once
// Golden files: a report normalised (times, pids, ports, UUIDs, stream entry ids and temp paths replaced
// by placeholders such as {uuid}, {entry3}, {tmp}, {port}: safe in JSON, XML and HTML) and compared with a file under tests/golden/. IDEM_UPDATE_GOLDEN=1 rewrites the files
// instead (review the diff before committing it). Header-only: used by unit and integration tests.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
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

  std::string text(std::string s) {
    for (const auto& [prefix, name] : paths_) {
      for (size_t pos; !prefix.empty() && (pos = s.find(prefix)) != std::string::npos;) s.replace(pos, prefix.size(), "{" + name + "}");
    }
    static const std::regex uuid("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
    static const std::regex entry("\\b[0-9]{10,}-[0-9]+\\b");
    static const std::regex temp("/(dev/shm|tmp)/(idemproof|itest|idem-test)[^\\s\"/]*");
    static const std::regex port("(127\\.0\\.0\\.1|localhost):[0-9]+");
    static const std::regex pid("pid [0-9]+");
    s = std::regex_replace(s, uuid, "{uuid}");
    s = std::regex_replace(s, temp, "{tmp}");
    s = std::regex_replace(s, port, "$1:{port}");
    s = std::regex_replace(s, pid, "pid {pid}");
    std::string out;
    auto begin = std::sregex_iterator(s.begin(), s.end(), entry);
    size_t last = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      out += s.substr(last, it->position() - last);
      auto [pos, fresh] = entries_.emplace(it->str(), entries_.size() + 1);
      out += "{entry" + std::to_string(pos->second) + "}";
      last = it->position() + it->length();
    }
    return out + s.substr(last);
  }

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

inline std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// "" when `actual` equals tests/golden/<name>, else a message naming the file (and how to update it).
/// With IDEM_UPDATE_GOLDEN=1 the file is rewritten and "" returned.
inline std::string compareGolden(const std::string& name, const std::string& actual) {
  auto path = std::filesystem::path(IDEM_SOURCE_DIR) / "tests" / "golden" / name;
  if (const char* u = std::getenv("IDEM_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << actual;
    return "";
  }
  if (!std::filesystem::exists(path)) return path.string() + " is missing (IDEM_UPDATE_GOLDEN=1 writes it)";
  std::string expected = readFile(path);
  if (expected == actual) return "";
  std::filesystem::path got = std::filesystem::temp_directory_path() / ("golden-actual-" + name);
  std::ofstream(got, std::ios::binary) << actual;
  return "differs from " + path.string() + "; actual output in " + got.string() +
         " (diff them; IDEM_UPDATE_GOLDEN=1 rewrites the golden file)";
}

inline std::string compareGolden(const std::string& name, const nlohmann::json& actual) {
  return compareGolden(name, actual.dump(2) + "\n");
}

} // namespace idem::testing
