#pragma once
/// Shared code of the server tests: /proc checks, a scratch dir outside Cleanup, and a cache dir
/// private to this test binary (IDEMPROOF_CACHE_DIR), so tests never touch the user's cache.
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace idem::test {

/// A directory NOT registered with Cleanup (a forked child's cleanup must not remove it).
struct ScratchDir {
  /// Under `root` (default: the system temp dir); mode 0755 so the `postgres` account can traverse it.
  explicit ScratchDir(const std::filesystem::path& root = {});
  ~ScratchDir();
  std::filesystem::path path;
};

/// Sets an environment variable for the lifetime of the object (restores the old value).
struct EnvOverride {
  EnvOverride(std::string name, const std::string& value);
  ~EnvOverride();
  std::string name, old;
  bool had = false;
};

/// A template cache private to this test binary (on /dev/shm when possible), removed at exit.
const std::filesystem::path& testCacheDir();

/// True when /proc/<pid> is absent or a zombie.
bool deadOrZombie(pid_t pid);
/// Polls deadOrZombie for up to 10 s (hang guard, not a timing bound).
bool eventuallyDead(pid_t pid);
/// Pids whose parent is `ppid` (from /proc/*/stat).
std::vector<pid_t> childrenOf(pid_t ppid);
/// The whole file ("" when absent).
std::string slurp(const std::filesystem::path& p);
/// Entries of a directory, sorted by name.
std::vector<std::string> listDir(const std::filesystem::path& dir);

} // namespace idem::test
