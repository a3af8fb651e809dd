#pragma once
// Shared code of the core tests: a file's text, and whether a process has died.
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace idem::testing {

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Dead or a zombie (reparented orphans are reaped late by PID 1 here).
inline bool deadOrZombie(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return true;
  auto close = stat.rfind(')');
  return close != std::string::npos && stat.size() > close + 2 && stat[close + 2] == 'Z';
}

/// Polls for up to 10 s.
inline bool eventuallyDead(pid_t pid) {
  for (int i = 0; i < 2000 && !deadOrZombie(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return deadOrZombie(pid);
}

} // namespace idem::testing
