#pragma once
/// Private: finding PostgreSQL's binaries and the cached template data directory. initdb costs
/// ~0.6–1 s, so it runs once per (PostgreSQL version, flags, owner) into a cache; each run copies
/// the template (~40 ms on tmpfs).
#include "servers/server_util.h"

#include <filesystem>
#include <string>
#include <vector>

namespace idem::servers {

/// The server binaries: $IDEMPROOF_PG_BINDIR, else `pg_config --bindir`, else the newest
/// /usr/lib/postgresql/<N>/bin holding both `postgres` and `initdb`.
struct PgBinaries {
  std::filesystem::path bindir;
  std::string versionLine; ///< `postgres -V`: "postgres (PostgreSQL) 15.18 (Debian ...)"
  std::string version;     ///< "15.18"
};

/// Throws UsageError when no usable PostgreSQL server is installed.
PgBinaries findPgBinaries();

/// The flags initdb runs with (part of the cache key).
const std::vector<std::string>& initdbFlags();

/// Where templates are cached, in order of preference: $IDEMPROOF_CACHE_DIR alone when set, else
/// /dev/shm/idemproof-cache (when /dev/shm is writable) then ~/.cache/idemproof.
std::vector<std::filesystem::path> cacheRoots();

/// The cache entry's name: "pg<version>-<owner>-<hash of bindir, version line, flags>".
std::string templateKey(const PgBinaries& bin, const Account& account);

/// Returns a template data dir owned by `account` (mode 0700): a valid cache entry, or one created
/// now by initdb and renamed into the first writable cache root (if another process won the race,
/// its entry is used). `scratch` is a directory traversable by `account` for initdb's work; when no
/// cache root is writable the template stays there.
std::filesystem::path ensureTemplate(const PgBinaries& bin, const Account& account,
                                     const std::filesystem::path& scratch);

/// Copies a data dir (mode bits kept) to `to`, which must not exist, owned by `account`.
void copyDataDir(const std::filesystem::path& from, const std::filesystem::path& to, const Account& account);

} // namespace idem::servers
