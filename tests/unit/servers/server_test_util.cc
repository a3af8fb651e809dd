#include "server_test_util.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace idem::test {

ScratchDir::ScratchDir(const fs::path& root) {
  std::string tmpl = ((root.empty() ? fs::temp_directory_path() : root) / "idem-test-scratch-XXXXXX").string();
  if (::mkdtemp(tmpl.data())) {
    path = tmpl;
    ::chmod(path.c_str(), 0755);
  }
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  if (!path.empty()) fs::remove_all(path, ec);
}

EnvOverride::EnvOverride(std::string n, const std::string& value) : name(std::move(n)) {
  if (const char* v = ::getenv(name.c_str())) {
    had = true;
    old = v;
  }
  ::setenv(name.c_str(), value.c_str(), 1);
}

EnvOverride::~EnvOverride() {
  if (had) ::setenv(name.c_str(), old.c_str(), 1);
  else ::unsetenv(name.c_str());
}

const fs::path& testCacheDir() {
  static ScratchDir dir(::access("/dev/shm", W_OK) == 0 ? fs::path("/dev/shm") : fs::path());
  static fs::path cache = dir.path / "cache";
  return cache;
}

namespace {
/// (state, ppid) from /proc/<pid>/stat; state 0 when absent.
std::pair<char, pid_t> statOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return {0, 0};
  auto close = stat.rfind(')');
  if (close == std::string::npos) return {0, 0};
  std::istringstream rest(stat.substr(close + 2));
  char state = 0;
  pid_t ppid = 0;
  rest >> state >> ppid;
  return {state, ppid};
}
} // namespace

bool deadOrZombie(pid_t pid) {
  char state = statOf(pid).first;
  return state == 0 || state == 'Z';
}

bool eventuallyDead(pid_t pid) {
  for (int i = 0; i < 2000 && !deadOrZombie(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return deadOrZombie(pid);
}

std::vector<pid_t> childrenOf(pid_t ppid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    pid_t pid = std::atoi(e.path().filename().c_str());
    if (pid > 0 && statOf(pid).second == ppid) out.push_back(pid);
  }
  return out;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> listDir(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace idem::test
