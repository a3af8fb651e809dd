// EmbeddedServers: start, connect with libpqxx and hiredis, stop, nothing left behind; the template cache.
#include "core/error.h"

#include "server_test_util.h"
#include "servers/server_util.h"
#include "servers/servers.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <pqxx/pqxx>

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/wait.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <thread>

using namespace idem;
using namespace idem::test;
namespace fs = std::filesystem;

namespace {

std::string conninfo(const ServerEndpoints& ep, bool withSecret = true) {
  return fmt::format("host={} port={} user={} dbname={}{}", ep.pg_host, ep.pg_port, ep.pg_user, ep.pg_database,
                     withSecret ? " password=" + ep.pg_password : std::string());
}

/// What a running pair of servers looks like from outside.
struct Observed {
  pid_t postmaster = 0;
  std::vector<pid_t> backends; ///< the postmaster's children
  fs::path pgDir;              ///< the temp dir holding the data dir
  pid_t valkey = 0;
  fs::path valkeyDir;          ///< the temp dir holding its data dir
};

std::string redisString(redisContext* c, const char* cmd) {
  auto* r = static_cast<redisReply*>(redisCommand(c, cmd));
  REQUIRE(r);
  std::string s;
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) s.assign(r->str, r->len);
  if (r->type == REDIS_REPLY_ARRAY && r->elements == 2) s.assign(r->element[1]->str, r->element[1]->len);
  freeReplyObject(r);
  return s;
}

Observed useServers(const ServerEndpoints& ep) {
  Observed o;
  {
    pqxx::connection c(conninfo(ep));
    pqxx::work w(c);
    w.exec0("CREATE TABLE t (x int)");
    w.exec0("INSERT INTO t VALUES (42)");
    CHECK(w.exec1("SELECT x FROM t")[0].as<int>() == 42);
    CHECK(w.exec1("SHOW fsync")[0].as<std::string>() == "off");
    o.pgDir = fs::path(w.exec1("SHOW data_directory")[0].as<std::string>()).parent_path();
    w.commit();
  }
  std::ifstream pidFile(o.pgDir / "data" / "postmaster.pid");
  pidFile >> o.postmaster;
  o.backends = childrenOf(o.postmaster);
  CHECK(o.backends.size() >= 3); // checkpointer, background writer, walwriter, ...

  redisContext* r = redisConnect(ep.valkey_host.c_str(), ep.valkey_port);
  REQUIRE(r);
  REQUIRE(r->err == 0);
  CHECK(redisString(r, ("AUTH " + ep.valkey_password).c_str()) == "OK");
  CHECK(redisString(r, "SELECT 63") == "OK");
  CHECK(redisString(r, "SET k v") == "OK");
  CHECK(redisString(r, "GET k") == "v");
  std::string info = redisString(r, "INFO server");
  auto at = info.find("process_id:");
  REQUIRE(at != std::string::npos);
  o.valkey = std::stoi(info.substr(at + 11));
  // It runs in its `dir`, <temp dir>/data.
  o.valkeyDir = fs::read_symlink(fmt::format("/proc/{}/cwd", o.valkey)).parent_path();
  redisFree(r);
  return o;
}

void checkAllGone(const Observed& o) {
  CHECK(::kill(o.postmaster, 0) == -1); // reaped by idemproof
  for (pid_t b : o.backends) CHECK(eventuallyDead(b));
  CHECK(::kill(o.valkey, 0) == -1);
  CHECK_FALSE(fs::exists(o.pgDir));
  CHECK_FALSE(fs::exists(o.valkeyDir));
}

struct Entry {
  ino_t ino;
  timespec mtime;
};

Entry statEntry(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return {st.st_ino, st.st_mtim};
}

} // namespace

TEST_CASE("embedded servers start, serve, stop, and leave nothing behind", "[embedded]") {
  EnvOverride cache("IDEMPROOF_CACHE_DIR", testCacheDir().string());
  EmbeddedServersPtr servers = EmbeddedServers::start();
  const ServerEndpoints& ep = servers->endpoints();
  CHECK(ep.embedded);
  CHECK(ep.pg_user == "postgres");
  CHECK(ep.pg_database == "postgres");
  CHECK(ep.pg_host == "127.0.0.1");
  CHECK(ep.valkey_host == "127.0.0.1");
  CHECK(ep.pg_port != ep.valkey_port);
  CHECK((ep.valkey_binary == "valkey-server" || ep.valkey_binary == "redis-server"));

  Observed o = useServers(ep);
  CHECK(o.valkeyDir.parent_path() == o.pgDir.parent_path()); // both on the same temp root
  if (::geteuid() == 0) {
    const passwd* pw = ::getpwnam("postgres");
    REQUIRE(pw);
    struct stat st {};
    REQUIRE(::stat((o.pgDir / "data").c_str(), &st) == 0);
    CHECK(st.st_uid == pw->pw_uid);
    CHECK((st.st_mode & 0777) == 0700);
    REQUIRE(::stat(fmt::format("/proc/{}", o.postmaster).c_str(), &st) == 0);
    CHECK(st.st_uid == pw->pw_uid); // runs as postgres, not root
  }
  servers.reset();
  checkAllGone(o);
}

TEST_CASE("no local user gets in: both servers refuse a connection without the secret", "[embedded]") {
  EnvOverride cache("IDEMPROOF_CACHE_DIR", testCacheDir().string());
  EmbeddedServersPtr servers = EmbeddedServers::start();
  const ServerEndpoints& ep = servers->endpoints();
  REQUIRE(ep.pg_password.size() == 32);
  REQUIRE(ep.valkey_password.size() == 32);
  CHECK(ep.pg_password != ep.valkey_password);

  // PostgreSQL: no password, a wrong one, the right one.
  CHECK_THROWS_WITH(pqxx::connection(conninfo(ep, false)), Catch::Contains("password"));
  {
    ServerEndpoints wrong = ep;
    wrong.pg_password = std::string(32, '0');
    CHECK_THROWS_WITH(pqxx::connection(conninfo(wrong)), Catch::Contains("password authentication failed"));
  }
  pqxx::connection ok(conninfo(ep));
  CHECK(ok.is_open());

  // Valkey: nothing without AUTH; with it, CONFIG is gone and DEBUG and MODULE are off.
  redisContext* r = redisConnect(ep.valkey_host.c_str(), ep.valkey_port);
  REQUIRE(r);
  REQUIRE(r->err == 0);
  auto reply = [&](const char* cmd) {
    auto* x = static_cast<redisReply*>(redisCommand(r, cmd));
    REQUIRE(x);
    std::string s(x->str ? x->str : "", x->str ? x->len : 0);
    freeReplyObject(x);
    return s;
  };
  CHECK(reply("SET k v").rfind("NOAUTH", 0) == 0);
  CHECK(reply("AUTH wrong").rfind("WRONGPASS", 0) == 0);
  CHECK(reply(("AUTH " + ep.valkey_password).c_str()) == "OK");
  CHECK(reply("SET k v") == "OK");
  CHECK(reply("CONFIG SET dir /tmp").find("unknown command") != std::string::npos);
  CHECK(reply("DEBUG SLEEP 0").find("DEBUG command not allowed") != std::string::npos);
  CHECK(reply("MODULE LOAD /tmp/x.so").find("MODULE command not allowed") != std::string::npos);
  std::string info = reply("INFO server");
  auto at = info.find("process_id:");
  REQUIRE(at != std::string::npos);
  pid_t valkey = std::stoi(info.substr(at + 11));
  redisFree(r);
  // The secret is not on the server's command line, where any local user could read it.
  std::ifstream cmdline(fmt::format("/proc/{}/cmdline", valkey), std::ios::binary);
  std::string cmd((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  CHECK(cmd.find(ep.valkey_password) == std::string::npos);
  if (::geteuid() == 0) { // not as root
    struct stat st {};
    REQUIRE(::stat(fmt::format("/proc/{}", valkey).c_str(), &st) == 0);
    CHECK(st.st_uid != 0);
  }
}

TEST_CASE("a second start reuses the cached template (copied across file systems)", "[embedded][cache]") {
  ScratchDir scratch("/tmp"); // not tmpfs: the template is copied into the cache, then renamed
  fs::path cacheDir = scratch.path / "cache";
  EnvOverride cache("IDEMPROOF_CACHE_DIR", cacheDir.string());
  REQUIRE_FALSE(fs::exists(cacheDir));
  EmbeddedServers::start().reset(); // initdb, then cached
  auto entries = listDir(cacheDir);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].rfind("pg", 0) == 0);
  fs::path entry = cacheDir / entries[0];
  Entry before = statEntry(entry), versionBefore = statEntry(entry / "PG_VERSION");

  REQUIRE(fs::is_directory(entry)); // existed before the second start
  EmbeddedServersPtr again = EmbeddedServers::start();
  Observed o = useServers(again->endpoints());
  again.reset();
  checkAllGone(o);
  CHECK(listDir(cacheDir) == entries); // no new entry, no leftover temp names
  Entry after = statEntry(entry), versionAfter = statEntry(entry / "PG_VERSION");
  CHECK(after.ino == before.ino);
  CHECK(after.mtime.tv_sec == before.mtime.tv_sec);
  CHECK(after.mtime.tv_nsec == before.mtime.tv_nsec);
  CHECK(versionAfter.ino == versionBefore.ino);
}

TEST_CASE("two idemproof runs racing to fill an empty cache both start", "[embedded][cache]") {
  ScratchDir scratch(testCacheDir().parent_path());
  fs::path cacheDir = scratch.path / "cache";
  EnvOverride cache("IDEMPROOF_CACHE_DIR", cacheDir.string());
  EmbeddedServersPtr a, b;
  std::string errA, errB;
  auto run = [](EmbeddedServersPtr& s, std::string& err) {
    try {
      s = EmbeddedServers::start();
    } catch (const std::exception& e) {
      err = e.what();
    }
  };
  std::thread ta(run, std::ref(a), std::ref(errA)), tb(run, std::ref(b), std::ref(errB));
  ta.join();
  tb.join();
  CHECK(errA == "");
  CHECK(errB == "");
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->endpoints().pg_port != b->endpoints().pg_port);
  CHECK(a->endpoints().valkey_port != b->endpoints().valkey_port);
  Observed oa = useServers(a->endpoints()), ob = useServers(b->endpoints());
  CHECK(listDir(cacheDir).size() == 1);
  a.reset();
  b.reset();
  checkAllGone(oa);
  checkAllGone(ob);
}

TEST_CASE("a Valkey beside another's PostgreSQL: its own port, secret and keys, the same PostgreSQL, stopped alone",
          "[embedded]") {
  EnvOverride cache("IDEMPROOF_CACHE_DIR", testCacheDir().string());
  EmbeddedServersPtr servers = EmbeddedServers::start();
  const ServerEndpoints& ep = servers->endpoints();
  EmbeddedServersPtr beside = EmbeddedServers::startValkeyBeside(ep);
  const ServerEndpoints& b = beside->endpoints();
  CHECK(b.embedded);
  CHECK(b.pg_port == ep.pg_port);
  CHECK(b.pg_password == ep.pg_password);
  CHECK(b.pg_database == ep.pg_database);
  CHECK(b.valkey_port != ep.valkey_port);
  CHECK(b.valkey_port != ep.pg_port);
  CHECK(b.valkey_password != ep.valkey_password);
  CHECK(b.valkey_db == 0);

  // Database 0 of each is its own: a key set in one is not in the other.
  auto connect = [](const ServerEndpoints& e) {
    redisContext* r = redisConnect(e.valkey_host.c_str(), e.valkey_port);
    REQUIRE(r);
    REQUIRE(r->err == 0);
    CHECK(redisString(r, ("AUTH " + e.valkey_password).c_str()) == "OK");
    return r;
  };
  redisContext* first = connect(ep);
  redisContext* second = connect(b);
  CHECK(redisString(first, "SET k first") == "OK");
  CHECK(redisString(second, "GET k").empty());
  std::string info = redisString(second, "INFO server");
  const pid_t besidePid = std::stoi(info.substr(info.find("process_id:") + 11));
  redisFree(second);

  // It owns no PostgreSQL: restart("pg") is refused, and PostgreSQL still serves.
  CHECK_THROWS_AS(beside->restart("pg", std::chrono::seconds(10)), UsageError);
  CHECK_THROWS_WITH(beside->restart("pg", std::chrono::seconds(10)), Catch::Contains("'pg'") && Catch::Contains("(valkey)"));
  {
    pqxx::connection c(conninfo(b));
    pqxx::work w(c);
    CHECK(w.exec1("SELECT 1")[0].as<int>() == 1);
  }
  // Stopping it stops its Valkey alone.
  beside.reset();
  CHECK(eventuallyDead(besidePid));
  CHECK(redisString(first, "GET k") == "first");
  redisFree(first);
  pqxx::connection c(conninfo(ep));
  CHECK(c.is_open());
}

namespace {

/// Whether account `pw` can open `p` for reading (a file) or list it (a folder): asked in a child that
/// switches to that account, as any process of it would.
bool readableBy(const passwd& pw, const fs::path& p, bool folder) {
  pid_t child = ::fork();
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(pw.pw_gid) != 0 || ::setuid(pw.pw_uid) != 0) ::_exit(3);
    if (folder) ::_exit(::opendir(p.c_str()) != nullptr ? 0 : 1);
    ::_exit(::open(p.c_str(), O_RDONLY) >= 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) != 3);
  return WEXITSTATUS(status) == 0;
}

/// Every folder and file under `root` (root included) that account `pw` can read.
std::vector<std::string> readableUnder(const passwd& pw, const fs::path& root) {
  std::vector<std::string> out;
  if (readableBy(pw, root, true)) out.push_back(root.string());
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_symlink()) continue;
    if (readableBy(pw, e.path(), e.is_directory())) out.push_back(e.path().string());
  }
  return out;
}

} // namespace

TEST_CASE("no other account reads the servers' secrets or logs, and each server account reads only its own",
          "[embedded][private]") {
  if (::geteuid() != 0) {
    WARN("not root: the servers run as idemproof's own user, which owns every file");
    return;
  }
  EnvOverride cache("IDEMPROOF_CACHE_DIR", testCacheDir().string());
  EmbeddedServersPtr servers = EmbeddedServers::start();
  Observed o = useServers(servers->endpoints());
  const passwd* nobody = ::getpwnam("nobody");
  REQUIRE(nobody);
  const passwd copy = *nobody;
  for (const auto& dir : {o.pgDir, o.valkeyDir}) {
    INFO(dir);
    struct stat st {};
    REQUIRE(::stat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0710); // traversable by the server's group alone, listable by no one else
    for (const auto& name : {"postgres.log", "valkey.log"})
      if (::stat((dir / name).c_str(), &st) == 0) CHECK((st.st_mode & 0777) == 0600);
    // `nobody` (every daemon that drops privileges) can't list the folder nor open anything in it: not
    // valkey.conf with the password, not pg_hba.conf, not a log.
    for (const auto& p : readableUnder(copy, dir)) UNSCOPED_INFO("nobody reads " << p);
    CHECK(readableUnder(copy, dir).empty());
  }
  // Valkey runs as an account of its own, not `nobody`, and PostgreSQL's cannot read its password.
  const passwd* server = ::getpwnam(servers::kServerAccount);
  REQUIRE(server);
  struct stat st {};
  REQUIRE(::stat(fmt::format("/proc/{}", o.valkey).c_str(), &st) == 0);
  CHECK(st.st_uid == server->pw_uid);
  const passwd* pg = ::getpwnam("postgres");
  REQUIRE(pg);
  const passwd pgCopy = *pg;
  CHECK_FALSE(readableBy(pgCopy, o.valkeyDir / "valkey.conf", false));
}
