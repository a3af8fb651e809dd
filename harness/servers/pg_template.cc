#include "servers/pg_template.h"

#include "core/error.h"
#include "core/child.h"

#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>

namespace fs = std::filesystem;

namespace idem::servers {
namespace {

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// The first line a short command prints on stdout ("" when it fails).
std::string firstLine(const std::string& cmd) {
  FILE* f = ::popen((cmd + " 2>/dev/null").c_str(), "re");
  if (!f) return "";
  char buf[1024];
  std::string line = std::fgets(buf, sizeof buf, f) ? buf : "";
  ::pclose(f);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

bool hasServer(const fs::path& dir) {
  return !dir.empty() && ::access((dir / "postgres").c_str(), X_OK) == 0 &&
         ::access((dir / "initdb").c_str(), X_OK) == 0;
}

bool validTemplate(const fs::path& dir, const Account& account) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  if (st.st_uid != account.uid || (st.st_mode & 077) != 0) return false;
  std::error_code ec;
  return fs::exists(dir / "PG_VERSION", ec) && fs::exists(dir / "global" / "pg_control", ec);
}

void chownTree(const fs::path& root, const Account& account) {
  auto own = [&](const fs::path& p) {
    if (::lchown(p.c_str(), account.uid, account.gid) != 0) {
      throw UsageError(fmt::format("embedded PostgreSQL: cannot chown {} to {}: {}", p.string(), account.name,
                                   std::strerror(errno)));
    }
  };
  own(root);
  for (const auto& e : fs::recursive_directory_iterator(root)) own(e.path());
}

void runInitdb(const PgBinaries& bin, const Account& account, const fs::path& data, const fs::path& scratch) {
  fs::create_directory(data);
  fs::permissions(data, fs::perms::owner_all, fs::perm_options::replace);
  if (account.drop) chownTree(data, account);
  ChildSpec spec;
  spec.argv = {(bin.bindir / "initdb").string(), "-D", data.string()};
  for (const auto& f : initdbFlags()) spec.argv.push_back(f);
  spec.cwd = scratch;
  spec.env = serverEnv();
  spec.log = scratch / "initdb.log";
  spec.what = "initdb";
  if (account.drop) {
    spec.uid = account.uid;
    spec.gid = account.gid;
  }
  Child child = Child::spawn(spec);
  auto status = child.waitFor(std::chrono::minutes(2));
  if (!status) status = child.stop(std::chrono::seconds(1));
  if (status->code != 0) {
    throw UsageError(fmt::format("embedded PostgreSQL: initdb failed ({}; log: {}): {}", status->str(),
                                 keepLog(spec.log, "initdb").string(), serverLogTail(spec.log)));
  }
}

bool usableRoot(const fs::path& root) {
  std::error_code ec;
  fs::create_directories(root, ec);
  return fs::is_directory(root, ec) && ::access(root.c_str(), W_OK | X_OK) == 0;
}

/// Removes the half-made copies `dest.tmp-PID-…` (install's) of processes that are gone: a command
/// killed (SIGKILL) while it copied a template into the cache leaves one, which nothing else removes.
void reapDeadCopies(const fs::path& dest) {
  const std::string prefix = dest.filename().string() + ".tmp-";
  std::error_code ec;
  for (fs::directory_iterator it(dest.parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const pid_t pid = static_cast<pid_t>(std::strtol(rest.c_str(), nullptr, 10));
    if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    fs::remove_all(it->path(), rm);
  }
}

/// Moves (or, across file systems, copies) a fresh template to `dest` atomically. False when `dest`
/// exists already (another process won) or the cache cannot be written.
bool install(const fs::path& fresh, const fs::path& dest, const Account& account) {
  if (::rename(fresh.c_str(), dest.c_str()) == 0) return true;
  if (errno != EXDEV) return false;
  std::random_device rd;
  fs::path tmp = dest.string() + fmt::format(".tmp-{}-{:08x}", ::getpid(), rd());
  try {
    copyDataDir(fresh, tmp, account);
  } catch (const std::exception&) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    return false;
  }
  bool ok = ::rename(tmp.c_str(), dest.c_str()) == 0;
  std::error_code ec;
  if (!ok) fs::remove_all(tmp, ec);
  return ok;
}

PgBinaries lookUpPgBinaries();

} // namespace

PgBinaries findPgBinaries() {
  // Two short commands (pg_config, postgres -V): looked up once per process and per IDEMPROOF_PG_BINDIR.
  static std::mutex mu;
  static std::map<std::string, PgBinaries> memo;
  const char* env = std::getenv("IDEMPROOF_PG_BINDIR");
  std::string memoKey = env ? env : "";
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = memo.find(memoKey); it != memo.end()) return it->second;
  PgBinaries bin = lookUpPgBinaries();
  memo.emplace(memoKey, bin);
  return bin;
}

namespace {

PgBinaries lookUpPgBinaries() {
  PgBinaries bin;
  if (const char* env = std::getenv("IDEMPROOF_PG_BINDIR"); env && *env) {
    bin.bindir = env;
    if (!hasServer(bin.bindir)) {
      throw UsageError(fmt::format("IDEMPROOF_PG_BINDIR={}: no executable postgres and initdb there", env));
    }
  } else {
    bin.bindir = firstLine("pg_config --bindir");
    if (!hasServer(bin.bindir)) {
      bin.bindir.clear();
      std::vector<std::pair<int, fs::path>> found;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
        int major = std::atoi(e.path().filename().c_str());
        if (major > 0 && hasServer(e.path() / "bin")) found.emplace_back(major, e.path() / "bin");
      }
      if (found.empty()) {
        throw UsageError("embedded PostgreSQL: no server found (pg_config --bindir, /usr/lib/postgresql/*/bin); "
                         "install postgresql, set IDEMPROOF_PG_BINDIR, or pass --database-url");
      }
      bin.bindir = std::max_element(found.begin(), found.end())->second;
    }
  }
  bin.versionLine = firstLine(shellQuote((bin.bindir / "postgres").string()) + " -V");
  // "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)": the third word.
  auto p = bin.versionLine.find(") ");
  bin.version = p == std::string::npos ? "" : bin.versionLine.substr(p + 2, bin.versionLine.find(' ', p + 2) - p - 2);
  if (bin.version.empty()) {
    throw UsageError(fmt::format("embedded PostgreSQL: '{} -V' printed no version", (bin.bindir / "postgres").string()));
  }
  return bin;
}

} // namespace

const std::vector<std::string>& initdbFlags() {
  // 1 MB WAL segments: each server's data dir is a copy of the template, whose first segment (16 MB by
  // default) was most of what every start copied and every stop removed.
  static const std::vector<std::string> flags = {"--no-sync", "-E", "UTF8", "--locale=C", "--auth=trust",
                                                 "-U", "postgres", "--wal-segsize=1"};
  return flags;
}

std::vector<fs::path> cacheRoots() {
  if (const char* env = std::getenv("IDEMPROOF_CACHE_DIR"); env && *env) return {fs::path(env)};
  std::vector<fs::path> roots;
  std::error_code ec;
  if (fs::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK | X_OK) == 0) {
    roots.emplace_back("/dev/shm/idemproof-cache");
  }
  const char* home = std::getenv("HOME");
  if (!home || !*home) {
    const passwd* pw = ::getpwuid(::geteuid());
    home = pw ? pw->pw_dir : nullptr;
  }
  if (home && *home) roots.push_back(fs::path(home) / ".cache" / "idemproof");
  return roots;
}

std::string templateKey(const PgBinaries& bin, const Account& account) {
  std::string flags;
  for (const auto& f : initdbFlags()) flags += f + " ";
  uint64_t h = fnv1a(bin.bindir.string() + "\n" + bin.versionLine + "\n" + flags);
  return fmt::format("pg{}-{}-{:016x}", bin.version, account.name, h);
}

fs::path ensureTemplate(const PgBinaries& bin, const Account& account, const fs::path& scratch) {
  const std::string key = templateKey(bin, account);
  const auto roots = cacheRoots();
  static std::once_flag reaped; // once a command: the cache's leftovers of commands killed while they wrote it
  std::call_once(reaped, [&] {
    for (const auto& root : roots) reapDeadCopies(root / key);
  });
  for (const auto& root : roots) {
    if (validTemplate(root / key, account)) return root / key;
  }
  fs::path fresh = scratch / "template";
  runInitdb(bin, account, fresh, scratch);
  for (const auto& root : roots) {
    if (!usableRoot(root)) continue;
    if (install(fresh, root / key, account)) return root / key;
    if (validTemplate(root / key, account)) return root / key; // another idemproof won the race
  }
  return fresh;
}

void copyDataDir(const fs::path& from, const fs::path& to, const Account& account) {
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::permissions(to, fs::perms::owner_all, fs::perm_options::replace);
  if (account.drop) chownTree(to, account);
}

} // namespace idem::servers
