// The golden-file functions of golden.h.
#include "golden.h"

#include <regex>

#include <unistd.h>

namespace idem::testing {

std::string Normaliser::text(std::string s) {
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

std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string compareGolden(const std::string& name, const std::string& actual) {
  auto path = std::filesystem::path(IDEM_SOURCE_DIR) / "tests" / "golden" / name;
  if (const char* u = std::getenv("IDEM_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << actual;
    return "";
  }
  if (!std::filesystem::exists(path)) return path.string() + " is missing (IDEM_UPDATE_GOLDEN=1 writes it)";
  std::string expected = readFile(path);
  if (expected == actual) return "";
  std::filesystem::path got = std::filesystem::temp_directory_path() / ("golden-actual-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(got, std::ios::binary) << actual;
  return "differs from " + path.string() + "; actual output in " + got.string() +
         " (diff them; IDEM_UPDATE_GOLDEN=1 rewrites the golden file)";
}

} // namespace idem::testing
