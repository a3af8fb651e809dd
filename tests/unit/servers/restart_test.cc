// EmbeddedServers::restart(): each server restarted in place on its port, with its secret; what survives
// (committed rows; keys, streams, groups, pending lists), what does not (open transactions, connections),
// the errors (an unknown server, a port it cannot bind again, a server that does not come back), and
// nothing left behind afterwards.
#include "core/error.h"

#include "server_test_util.h"
#include "servers/servers.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <pqxx/pqxx>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>

using namespace idem;
using namespace idem::test;
namespace fs = std::filesystem;

// Named, not anonymous: the test sources are compiled as one unity file.
namespace idem::test::restart_cases {

constexpr auto kRestartTimeout = std::chrono::seconds(30); // hang guard, not a timing bound

std::string pgConninfo(const ServerEndpoints& ep, bool withSecret = true) {
  return fmt::format("host={} port={} user={} dbname={}{}", ep.pg_host, ep.pg_port, ep.pg_user, ep.pg_database,
                     withSecret ? " password=" + ep.pg_password : std::string());
}

/// The PostgreSQL server behind `c`: its temp dir (parent of the data dir), postmaster pid, children.
struct PgProcess {
  fs::path dir;
  pid_t postmaster = 0;
  std::vector<pid_t> children;
};

PgProcess pgProcess(pqxx::connection& c) {
  PgProcess p;
  pqxx::nontransaction n(c);
  p.dir = fs::path(n.exec1("SHOW data_directory")[0].as<std::string>()).parent_path();
  std::ifstream(p.dir / "data" / "postmaster.pid") >> p.postmaster;
  p.children = childrenOf(p.postmaster);
  return p;
}

void checkPgGone(const PgProcess& p) {
  CHECK(::kill(p.postmaster, 0) == -1); // reaped by idemproof
  for (pid_t b : p.children) CHECK(eventuallyDead(b));
}

using Redis = std::unique_ptr<redisContext, decltype(&redisFree)>;
using Reply = std::unique_ptr<redisReply, decltype(&freeReplyObject)>;

Redis redisConnectTo(const ServerEndpoints& ep) {
  Redis c(redisConnect(ep.valkey_host.c_str(), ep.valkey_port), &redisFree);
  REQUIRE(c);
  REQUIRE(c->err == 0);
  return c;
}

/// One command's reply (REQUIREd: the connection must answer).
Reply cmd(redisContext* c, const std::string& command) {
  Reply r(static_cast<redisReply*>(redisCommand(c, command.c_str())), &freeReplyObject);
  INFO(command << ": " << (c->err ? c->errstr : ""));
  REQUIRE(r);
  return r;
}

/// A status, string or error reply's text; an integer's digits.
std::string text(const Reply& r) {
  if (r->type == REDIS_REPLY_INTEGER) return std::to_string(r->integer);
  return r->str ? std::string(r->str, r->len) : std::string();
}

/// A reply as one line, recursively (arrays in brackets), for comparing whole replies.
std::string flat(const redisReply* r) {
  switch (r->type) {
  case REDIS_REPLY_ARRAY: {
    std::string out = "[";
    for (size_t i = 0; i < r->elements; ++i) out += (i ? " " : "") + flat(r->element[i]);
    return out + "]";
  }
  case REDIS_REPLY_INTEGER: return std::to_string(r->integer);
  case REDIS_REPLY_NIL: return "nil";
  default: return std::string(r->str, r->len);
  }
}

std::string flat(const Reply& r) { return flat(r.get()); }

/// XPENDING's extended form without the idle times (they grow): "id consumer deliveries" per entry.
std::string pendingEntries(redisContext* c) {
  Reply r = cmd(c, "XPENDING s g - + 100");
  REQUIRE(r->type == REDIS_REPLY_ARRAY);
  std::string out;
  for (size_t i = 0; i < r->elements; ++i) {
    const redisReply* e = r->element[i];
    REQUIRE(e->elements == 4);
    out += fmt::format("{} {} {};", flat(e->element[0]), flat(e->element[1]), flat(e->element[3]));
  }
  return out;
}

pid_t valkeyPid(redisContext* c) {
  std::string info = text(cmd(c, "INFO server"));
  auto at = info.find("process_id:");
  REQUIRE(at != std::string::npos);
  return std::stoi(info.substr(at + 11));
}

/// A fake bin dir for PostgreSQL: `postgres` runs the real one on its first launch on a data dir, and
/// on any later launch (a restart) runs `later` instead; `initdb` is the real one.
struct FakePgBindir {
  ScratchDir dir;
  explicit FakePgBindir(const std::string& later) {
    const char* real = "/usr/lib/postgresql";
    fs::path bindir;
    // The real binaries: the newest /usr/lib/postgresql/<N>/bin, as findPgBinaries() finds them.
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(real, ec))
      if (fs::exists(e.path() / "bin" / "postgres") && (bindir.empty() || e.path() / "bin" > bindir))
        bindir = e.path() / "bin";
    REQUIRE_FALSE(bindir.empty());
    write("postgres", fmt::format("if [ \"$1\" = -D ] && [ -e \"$2/launched-once\" ]; then\n{}\nfi\n"
                                  "[ \"$1\" = -D ] && touch \"$2/launched-once\"\n"
                                  "exec {} \"$@\"\n",
                                  later, (bindir / "postgres").string()));
    write("initdb", fmt::format("exec {} \"$@\"\n", (bindir / "initdb").string()));
  }
  void write(const std::string& name, const std::string& body) {
    fs::path p = dir.path / name;
    std::ofstream(p) << "#!/bin/sh\n" << body;
    ::chmod(p.c_str(), 0755);
  }
};

/// The "(log: PATH)" of a UsageError message.
fs::path logOf(const std::string& message) {
  auto open = message.find("(log: ");
  if (open == std::string::npos) return {};
  open += 6;
  return message.substr(open, message.find(')', open) - open);
}

} // namespace idem::test::restart_cases

using namespace idem::test::restart_cases;

TEST_CASE("restart pg: open transactions roll back, connections break, committed rows stay, same port and "
          "secret",
          "[embedded][restart]") {
  EnvOverride cache("IDEMPROOF_CACHE_DIR", testCacheDir().string());
  EmbeddedServersPtr servers = EmbeddedServers::start();
  const ServerEndpoints ep = servers->endpoints();

  pqxx::connection setup(pgConninfo(ep));
  {
    pqxx::work w(setup);
    w.exec0("CREATE TABLE r (x int)");
    w.commit();
  }
  PgProcess before = pgProcess(setup);
  pqxx::connection open(pgConninfo(ep));
  pqxx::work openTx(open);
  openTx.exec0("INSERT INTO r VALUES (1)"); // never committed
  {
    pqxx::connection other(pgConninfo(ep));
    pqxx::work w(other);
    w.exec0("INSERT INTO r VALUES (2)");
    w.commit();
  }

  servers->restart("pg", kRestartTimeout);

  CHECK(servers->endpoints().pg_port == ep.pg_port);
  CHECK(servers->endpoints().pg_password == ep.pg_password);
  CHECK_THROWS_AS(openTx.exec0("INSERT INTO r VALUES (3)"), pqxx::broken_connection);
  checkPgGone(before);

  pqxx::connection again(pgConninfo(ep)); // the same port and password
  PgProcess after = pgProcess(again);
  CHECK(after.postmaster != before.postmaster);
  CHECK(after.dir == before.dir); // the same data dir
  {
    pqxx::work w(again);
    auto rows = w.exec("SELECT x FROM r ORDER BY x");
    REQUIRE(rows.size() == 1);
    CHECK(rows[0][0].as<int>() == 2);
    CHECK(w.exec1("SHOW fsync")[0].as<std::string>() == "off"); // launched with the same settings
    CHECK(w.exec1("SHOW listen_addresses")[0].as<std::string>() == "127.0.0.1");
    CHECK(w.exec1("SHOW unix_socket_directories")[0].as<std::string>() == (before.dir / "data").string());
  }
  // pg_hba.conf survived: still no way in without the secret.
  CHECK_THROWS_WITH(pqxx::connection(pgConninfo(ep, false)), Catch::Contains("password"));

  servers.reset();
  checkPgGone(after);
  CHECK_FALSE(fs::exists(after.dir));
}

TEST_CASE("restart valkey: keys, streams, groups and pending lists come back on the same port, old "
          "connections break",
          "[embedded][restart]") {
  EnvOverride cache("IDEMPROOF_CACHE_DIR", testCacheDir().string());
  EmbeddedServersPtr servers = EmbeddedServers::start();
  const ServerEndpoints ep = servers->endpoints();

  Redis old = redisConnectTo(ep);
  REQUIRE(text(cmd(old.get(), "AUTH " + ep.valkey_password)) == "OK");
  for (int i = 1; i <= 5; ++i) CHECK(cmd(old.get(), fmt::format("XADD s * n {}", i))->type == REDIS_REPLY_STRING);
  CHECK(text(cmd(old.get(), "XGROUP CREATE s g 0")) == "OK");
  CHECK(cmd(old.get(), "XREADGROUP GROUP g c1 COUNT 3 STREAMS s >")->type == REDIS_REPLY_ARRAY);
  CHECK(cmd(old.get(), "XREADGROUP GROUP g c2 COUNT 1 STREAMS s >")->type == REDIS_REPLY_ARRAY);
  Reply firstPending = cmd(old.get(), "XPENDING s g - + 1");
  REQUIRE(firstPending->elements == 1);
  CHECK(text(cmd(old.get(), fmt::format("XACK s g {}", flat(firstPending->element[0]->element[0])))) == "1");
  CHECK(text(cmd(old.get(), "SET k v")) == "OK");
  CHECK(text(cmd(old.get(), "SELECT 63")) == "OK"); // every database is kept, not only db 0
  CHECK(text(cmd(old.get(), "SET k63 v63")) == "OK");
  CHECK(text(cmd(old.get(), "SELECT 0")) == "OK");
  const std::string pending = flat(cmd(old.get(), "XPENDING s g"));
  const std::string pendingList = pendingEntries(old.get());
  const std::string groups = flat(cmd(old.get(), "XINFO GROUPS s"));
  const std::string entries = flat(cmd(old.get(), "XRANGE s - +"));
  CHECK(pending.rfind("[3 ", 0) == 0); // 3 pending: 2 of c1's, c2's one
  pid_t oldPid = valkeyPid(old.get());
  fs::path dir = fs::read_symlink(fmt::format("/proc/{}/cwd", oldPid)).parent_path(); // it runs in <temp>/data

  servers->restart("valkey", kRestartTimeout);

  CHECK(servers->endpoints().valkey_port == ep.valkey_port);
  CHECK(servers->endpoints().valkey_password == ep.valkey_password);
  // The old connection: an I/O error (closed by the server), no reply.
  CHECK(redisCommand(old.get(), "PING") == nullptr);
  CHECK((old->err == REDIS_ERR_EOF || old->err == REDIS_ERR_IO));
  CHECK(::kill(oldPid, 0) == -1); // reaped

  Redis again = redisConnectTo(ep); // the same port
  CHECK(text(cmd(again.get(), "GET k")).rfind("NOAUTH", 0) == 0); // still guarded by the secret
  REQUIRE(text(cmd(again.get(), "AUTH " + ep.valkey_password)) == "OK");
  CHECK(valkeyPid(again.get()) != oldPid);
  CHECK(text(cmd(again.get(), "GET k")) == "v");
  CHECK(text(cmd(again.get(), "XLEN s")) == "5");
  CHECK(flat(cmd(again.get(), "XRANGE s - +")) == entries);
  CHECK(flat(cmd(again.get(), "XPENDING s g")) == pending);
  CHECK(pendingEntries(again.get()) == pendingList); // ids, consumers, delivery counts
  CHECK(flat(cmd(again.get(), "XINFO GROUPS s")) == groups);                // last-delivered-id too
  CHECK(text(cmd(again.get(), "SELECT 63")) == "OK");
  CHECK(text(cmd(again.get(), "GET k63")) == "v63");
  CHECK(text(cmd(again.get(), "CONFIG GET dir")).find("unknown command") != std::string::npos); // hardening kept
  CHECK(text(cmd(again.get(), "DEBUG SLEEP 0")).find("DEBUG command not allowed") != std::string::npos);
  pid_t newPid = valkeyPid(again.get());

  servers.reset();
  CHECK(::kill(newPid, 0) == -1);
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("restart of an unknown server is a UsageError naming it", "[embedded][restart]") {
  EnvOverride cache("IDEMPROOF_CACHE_DIR", testCacheDir().string());
  EmbeddedServersPtr servers = EmbeddedServers::start();
  CHECK_THROWS_AS(servers->restart("mysql", kRestartTimeout), UsageError);
  CHECK_THROWS_WITH(servers->restart("mysql", kRestartTimeout), Catch::Contains("'mysql'"));
  pqxx::connection c(pgConninfo(servers->endpoints())); // both still serve
  Redis r = redisConnectTo(servers->endpoints());
  CHECK(text(cmd(r.get(), "AUTH " + servers->endpoints().valkey_password)) == "OK");
}

TEST_CASE("restart pg whose port cannot be bound again: a UsageError, never another port", "[embedded][restart]") {
  // The relaunch fails as PostgreSQL does on a port another process took between its exit and the bind.
  FakePgBindir fake("echo 'LOG:  could not bind IPv4 address \"127.0.0.1\": Address already in use' >&2\n"
                    "echo 'FATAL:  could not create any TCP/IP sockets' >&2\nexit 1");
  ScratchDir cacheRoot;
  EnvOverride bindir("IDEMPROOF_PG_BINDIR", fake.dir.path.string());
  EnvOverride cache("IDEMPROOF_CACHE_DIR", (cacheRoot.path / "cache").string());
  EmbeddedServersPtr servers = EmbeddedServers::start();
  const ServerEndpoints ep = servers->endpoints();
  PgProcess before;
  {
    pqxx::connection c(pgConninfo(ep));
    before = pgProcess(c);
  }
  std::string message;
  try {
    servers->restart("pg", kRestartTimeout);
  } catch (const UsageError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK(message.rfind(fmt::format("embedded PostgreSQL on port {} could not bind its port again", ep.pg_port), 0) == 0);
  CHECK(message.find("Address already in use") != std::string::npos);
  CHECK(message.find('\n') == std::string::npos);
  fs::path kept = logOf(message);
  CHECK(slurp(kept).find("could not create any TCP/IP sockets") != std::string::npos);
  fs::remove(kept);
  CHECK(servers->endpoints().pg_port == ep.pg_port); // not moved
  checkPgGone(before);
  servers.reset();
  CHECK_FALSE(fs::exists(before.dir));
}

TEST_CASE("restart pg that does not come back in time: a UsageError with its name, port and log",
          "[embedded][restart]") {
  FakePgBindir fake("exec sleep 600"); // never ready; ended by the failure's stop()
  ScratchDir cacheRoot;
  EnvOverride bindir("IDEMPROOF_PG_BINDIR", fake.dir.path.string());
  EnvOverride cache("IDEMPROOF_CACHE_DIR", (cacheRoot.path / "cache").string());
  EmbeddedServersPtr servers = EmbeddedServers::start();
  const ServerEndpoints ep = servers->endpoints();
  PgProcess before;
  {
    pqxx::connection c(pgConninfo(ep));
    before = pgProcess(c);
  }
  std::string message;
  try {
    servers->restart("pg", std::chrono::seconds(3));
  } catch (const UsageError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK(message.rfind(fmt::format("embedded PostgreSQL on port {} did not become ready in time (log: ", ep.pg_port), 0) ==
        0);
  fs::path kept = logOf(message);
  CHECK(fs::exists(kept));
  fs::remove(kept);
  checkPgGone(before);
  CHECK(childrenOf(::getpid()).size() == 1); // only the Valkey server: the stuck relaunch is gone
  servers.reset();
  CHECK(childrenOf(::getpid()).empty());
  CHECK_FALSE(fs::exists(before.dir));
}
