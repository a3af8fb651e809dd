#include "servers/server_util.h"

#include "core/cleanup.h"
#include "core/error.h"
#include "core/temp_dir.h"

#include <pwd.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <system_error>
#include <fstream>

namespace idem::servers {

std::string serverLogTail(const std::filesystem::path& log, uintmax_t offset, int lines) {
  std::ifstream in(log);
  if (!in) return "(no log)";
  in.seekg(static_cast<std::streamoff>(offset));
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    last.push_back(line);
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  if (last.empty()) return "(log is empty)";
  std::string out;
  for (const auto& l : last) out += (out.empty() ? "" : " | ") + l;
  return out;
}

bool portTakenIn(const std::filesystem::path& log, uintmax_t offset) {
  std::ifstream in(log);
  in.seekg(static_cast<std::streamoff>(offset));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // strerror's words (PostgreSQL, Valkey), or Go's (nats-server: "bind: address already in use").
  return text.find("Address already in use") != std::string::npos || text.find("address already in use") != std::string::npos;
}

uintmax_t fileSize(const std::filesystem::path& path) {
  std::error_code ec;
  auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : n;
}

std::filesystem::path keepLog(const std::filesystem::path& log, const std::string& name) {
  // A signal's clean-up stops the servers and removes the temp folders: a server that failed because of it
  // leaves nothing of its own behind in the temp root.
  if (Cleanup::interrupted() != 0) return log;
  std::error_code ec;
  std::filesystem::path root;
  try {
    root = tempRoot();
  } catch (const std::exception&) {
    return log;
  }
  auto dest = root / fmt::format("idemproof-{}-{}.log", name, ::getpid());
  std::filesystem::copy_file(log, dest, std::filesystem::copy_options::overwrite_existing, ec);
  return ec ? log : dest;
}

namespace {

/// `rootName` when idemproof is root (a server must not run as root), else the current user; `missing`
/// is the error when that account does not exist.
Account accountFor(const char* rootName, const char* missing) {
  Account a;
  if (::geteuid() == 0) {
    const passwd* pw = ::getpwnam(rootName);
    if (!pw) throw UsageError(missing);
    a.name = pw->pw_name;
    a.uid = pw->pw_uid;
    a.gid = pw->pw_gid;
    a.drop = true;
    return a;
  }
  a.uid = ::geteuid();
  a.gid = ::getegid();
  const passwd* pw = ::getpwuid(a.uid);
  a.name = pw ? pw->pw_name : fmt::format("uid{}", a.uid);
  return a;
}

} // namespace

Account postgresAccount() {
  return accountFor("postgres", "embedded PostgreSQL: idemproof runs as root and PostgreSQL refuses root, but there "
                                "is no 'postgres' account to run it as (create one, or pass --database-url)");
}

Account serverAccount() {
  static const std::string missing = fmt::format(
      "embedded Valkey: idemproof runs as root and runs the server as the system account '{0}', which does not exist "
      "(create it: useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "
      "{0}; scripts/install-deps.sh and the .deb do; or pass --valkey-url)", kServerAccount);
  return accountFor(kServerAccount, missing.c_str());
}

void grantTraverse(const std::filesystem::path& dir, const Account& account) {
  if (!account.drop) return;
  if (::chown(dir.c_str(), static_cast<uid_t>(-1), account.gid) != 0 || ::chmod(dir.c_str(), 0710) != 0)
    throw UsageError(fmt::format("cannot give the account {} access to {}: {}", account.name, dir.string(),
                                 std::strerror(errno)));
}

std::string newSecret() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::system_error(errno, std::system_category(), "getrandom");
    got += static_cast<size_t>(n);
  }
  std::string hex;
  for (unsigned char b : bytes) hex += fmt::format("{:02x}", b);
  return hex;
}

std::map<std::string, std::string> serverEnv() {
  return {{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"LANG", "C"}, {"LC_ALL", "C"}};
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

} // namespace idem::servers
