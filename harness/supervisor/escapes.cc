#include "supervisor/escapes.h"

#include "core/child.h"
#include "core/owner.h"

#include <sys/wait.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <atomic>
#include <thread>
#include <vector>

extern char** environ;

namespace idem {

std::string nextRunTag() {
  static std::atomic<uint64_t> runs{0};
  return fmt::format("{}/{}", Owner::self().tag(), ++runs);
}

std::map<std::string, std::string> currentEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

namespace {

/// Waits (up to a second) for an adopted process that was sent SIGKILL, if it is idemproof's child.
void reapAdopted(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    int st = 0;
    pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

} // namespace

void reapEscaped(History& h, const std::string& runTag, const std::set<pid_t>& groups) {
  std::vector<pid_t> killed;
  for (pid_t pid : withEnv(ownTree(), kRunEnv, runTag)) {
    std::string label = envOf(pid, kProcessEnv);
    std::string command = commandLine(pid);
    // Still in a consumer's process group, which was sent SIGKILL: it is dying, it did not escape.
    bool escaped = !groups.count(processGroup(pid).value_or(-1));
    if (::kill(pid, SIGKILL) != 0) continue;
    killed.push_back(pid);
    if (escaped) h.append(label.empty() ? "harness" : label, ops::Escape{pid, command});
  }
  for (pid_t pid : adoptedOrphans()) {
    bool marked = !envOf(pid, kRunEnv).empty(); // another run's, or this run's (killed above)
    std::string command = commandLine(pid);
    if (!marked && processStart(pid) && ::kill(pid, SIGKILL) == 0)
      h.append("harness", ops::Note{fmt::format("killed process {} ({}): a consumer's descendant that left its "
                                                "process group and cleared its environment, so no run can be "
                                                "named for it",
                                                pid, command)});
    if (!marked) killed.push_back(pid);
  }
  // What was re-parented to idemproof is its child now: reap it, or it stays a zombie.
  for (pid_t pid : killed) {
    if (!Child::started(pid)) reapAdopted(pid);
  }
}

} // namespace idem
