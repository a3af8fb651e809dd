// TempDir.
#include "core/temp_dir.h"

#include "core/error.h"
#include "core/owner.h"

#include "core/cleanup.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <system_error>
#include <thread>

namespace idem {
namespace {

bool usableDir(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_directory(p, ec) && ::access(p.c_str(), W_OK | X_OK) == 0;
}

} // namespace

std::filesystem::path tempRoot() {
  if (const char* own = std::getenv(kTempRootEnv); own && *own) {
    if (!usableDir(own))
      throw UsageError(fmt::format("{}={}: not a directory idemproof can write to", kTempRootEnv, own));
    return own;
  }
  if (usableDir("/dev/shm")) return "/dev/shm";
  const char* t = std::getenv("TMPDIR");
  if (t && *t && usableDir(t)) return t;
  return "/tmp";
}

TempDir::TempDir(const std::string& prefix) {
  // idemproof-<kind>-<owner>-XXXXXX: reapOrphans() removes it once its owner is gone (core/owner.h).
  std::string kind = prefix;
  while (!kind.empty() && kind.back() == '-') kind.pop_back();
  std::string tmpl = (tempRoot() / fmt::format("{}-{}-XXXXXX", kind, Owner::self().tag())).string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw sysError(fmt::format("cannot create temp dir {}", tmpl));
  path_ = tmpl;
  // Private (mkdtemp makes it 0700): logs and the servers' secrets live here. A server that runs as an
  // account of its own gets through by group (servers/server_util.h, grantTraverse), no other account.
  auto p = path_;
  cleanupId_ = Cleanup::instance().add("remove " + p.string(), [p] {
    // On a signal, another thread may still be writing inside (a data dir being copied): a directory it
    // filled meanwhile fails remove_all (not empty). Again until it is gone; the writer fails once the
    // directories it writes into are gone.
    for (int tries = 0; tries < 100; ++tries) {
      std::error_code ec;
      std::filesystem::remove_all(p, ec);
      if (!std::filesystem::exists(p, ec) && !ec) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
}

TempDir::~TempDir() {
  Cleanup::instance().remove(cleanupId_);
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}


} // namespace idem
