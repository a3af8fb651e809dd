#pragma once
/// Private functions of the embedded servers: log tails for error messages, keeping a failed server's
/// log, and the account a server runs as.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace idem::servers {

/// What a server's awaitReady() saw (other failures throw UsageError).
enum class Readiness { Ready, PortTaken };

/// The last `lines` non-empty lines of `log` from byte `offset` on, joined with " | " (one line).
std::string serverLogTail(const std::filesystem::path& log, uintmax_t offset = 0, int lines = 3);

/// Whether `log`, from byte `offset` on, says a bind failed with EADDRINUSE.
bool portTakenIn(const std::filesystem::path& log, uintmax_t offset);

/// Size of `path` in bytes, 0 when it does not exist.
uintmax_t fileSize(const std::filesystem::path& path);

/// Copies a failed server's log out of its temp dir (which is about to be removed) to
/// $TMPDIR or /tmp as idemproof-<name>-<pid>.log and returns that path (or `log` if the copy fails, and when a
/// signal's clean-up is under way: the server failed because of it, and nothing of the run is to stay).
std::filesystem::path keepLog(const std::filesystem::path& log, const std::string& name);

/// Who a server runs as: the `postgres` account when idemproof runs as root, else the current user.
struct Account {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  bool drop = false; ///< true: the child must switch to uid/gid (idemproof is root)
};

/// The account for PostgreSQL. Throws UsageError when root and there is no `postgres` account.
Account postgresAccount();

/// The account the servers other than PostgreSQL (Valkey) run as: the current user, or, when idemproof is
/// root, kServerAccount — an account no other process uses, so that no other process can read the
/// server's password in its configuration (`nobody` is shared by every daemon that drops privileges).
/// Throws UsageError (one line: how to create it) when root and the account does not exist.
Account serverAccount();

/// The system account scripts/install-deps.sh and the .deb create for the servers.
inline constexpr const char* kServerAccount = "idemproof-server";

/// Makes `dir` (a temp folder of idemproof's, mode 0700) traversable by `account` alone besides its owner:
/// group `account.gid`, mode 0710 (a server must reach its data dir inside, and may list nothing). Nothing
/// when the account is idemproof's own. Throws UsageError naming the folder.
void grantTraverse(const std::filesystem::path& dir, const Account& account);

/// A fresh secret for one server: 32 hex digits from the kernel's random source. The embedded servers
/// refuse a connection without it (docs/target-contract.md).
std::string newSecret();

/// A minimal environment for a server child.
std::map<std::string, std::string> serverEnv();

/// 64-bit FNV-1a, stable across builds (cache keys).
uint64_t fnv1a(const std::string& s);

} // namespace idem::servers
