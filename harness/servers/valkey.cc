#include "servers/valkey.h"

#include "core/error.h"
#include "servers/server_util.h"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <unistd.h>

#include <boost/process/search_path.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>

namespace fs = std::filesystem;

namespace idem::servers {
namespace {

/// valkey-server, else redis-server, on PATH: its path and name.
std::pair<fs::path, std::string> findValkey() {
  for (const char* candidate : {"valkey-server", "redis-server"}) {
    auto p = boost::process::search_path(candidate);
    if (!p.empty()) return {p.string(), candidate};
  }
  throw UsageError("embedded Valkey: neither valkey-server nor redis-server is on PATH "
                   "(install one, or pass --valkey-url)");
}

/// `s` as one argument of a valkey.conf line: in double quotes, with `\` and `"` escaped.
std::string configQuote(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '\\' || ch == '"') out += '\\';
    out += ch;
  }
  return out + "\"";
}

/// Time left until `deadline` as a socket timeout (at least 1 ms: hiredis reads 0 as "no timeout").
timeval timeLeft(std::chrono::steady_clock::time_point deadline) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::steady_clock::now()).count();
  us = std::max<long long>(us, 1000);
  return timeval{static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
}

} // namespace

ValkeyServer::ValkeyServer() : ValkeyServer(findValkey()) {}

ValkeyServer::ValkeyServer(std::pair<fs::path, std::string> exe)
    : ServerProcess("idemproof-valkey-", "valkey.log", exe.second, exe.second), exe_(std::move(exe.first)),
      name_(std::move(exe.second)), account_(serverAccount()), conf_(dir_.path() / "valkey.conf"),
      data_(dir_.path() / "data") {
  // Its `dir`, the only place it writes: a directory of its own account (the temp dir is idemproof's),
  // private to it like the data dir of PostgreSQL.
  grantTraverse(dir_.path(), account_);
  std::error_code ec;
  fs::create_directory(data_, ec);
  if (ec) throw UsageError(fmt::format("embedded {}: cannot create {}: {}", name_, data_.string(), ec.message()));
  fs::permissions(data_, fs::perms::owner_all, fs::perm_options::replace);
  if (account_.drop && ::chown(data_.c_str(), account_.uid, account_.gid) != 0)
    throw UsageError(fmt::format("embedded {}: cannot chown {}", name_, data_.string()));
  // No local user gets in: every connection must AUTH with this server's secret (in a file private to
  // the server's account, not on its command line), and the commands that reach beyond the server's data
  // are gone (CONFIG could point its dir anywhere; DEBUG and MODULE are off by default since 7.0, and stay
  // off). It runs as an unprivileged account when idemproof is root.
  // Persistence: none on its own (no save points, no AOF); restart() snapshots it with SHUTDOWN SAVE into
  // `dir`/`dbfilename`, which the next launch loads. SAVE and SHUTDOWN stay available to clients: with
  // CONFIG gone they can write only that file.
  {
    std::ofstream out(conf_, std::ios::trunc);
    out << "requirepass " << secret() << "\n"
        << "rename-command CONFIG \"\"\n"
        << "enable-debug-command no\n"
        << "enable-module-command no\n"
        << "dir " << configQuote(data_.string()) << "\n"
        << "dbfilename dump.rdb\n"
        << "save \"\"\n"
        << "appendonly no\n";
    if (!out) throw UsageError(fmt::format("embedded {}: cannot write {}", name_, conf_.string()));
  }
  fs::permissions(conf_, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  if (account_.drop && ::chown(conf_.c_str(), account_.uid, account_.gid) != 0)
    throw UsageError(fmt::format("embedded {}: cannot chown {}", name_, conf_.string()));
}

ValkeyServer::~ValkeyServer() { stop(); }

ChildSpec ValkeyServer::command(int port) const {
  ChildSpec spec;
  // dir, dbfilename, save and appendonly are in the conf file (restart() relies on them).
  spec.argv = {exe_.string(), conf_.string(), "--port", std::to_string(port), "--bind", "127.0.0.1",
               "--daemonize", "no", "--protected-mode", "no", "--databases", "64"};
  if (account_.drop) {
    spec.uid = account_.uid;
    spec.gid = account_.gid;
  }
  return spec;
}

ServerProcess::Probe ValkeyServer::probe() {
  timeval timeout{1, 0};
  std::unique_ptr<redisContext, decltype(&redisFree)> c(redisConnectWithTimeout("127.0.0.1", port(), timeout),
                                                        &redisFree);
  if (!c || c->err) return Probe::NotYet;
  redisSetTimeout(c.get(), timeout);
  auto* auth = static_cast<redisReply*>(redisCommand(c.get(), "AUTH %s", secret().c_str()));
  if (!auth) return Probe::NotYet;
  bool authed = auth->type == REDIS_REPLY_STATUS;
  freeReplyObject(auth);
  if (!authed) return Probe::Other; // a server that doesn't know our secret is not ours
  // The default sections: server (process_id) and persistence (loading).
  auto* r = static_cast<redisReply*>(redisCommand(c.get(), "INFO"));
  if (!r) return Probe::NotYet;
  Probe result = Probe::NotYet;
  if (r->type == REDIS_REPLY_STRING) {
    std::string info(r->str, r->len);
    if (info.find(fmt::format("process_id:{}\r", child_.pid())) == std::string::npos) result = Probe::Other;
    else if (info.find("loading:0\r") != std::string::npos) result = Probe::Ours; // its snapshot is loaded
  }
  freeReplyObject(r);
  return result;
}

void ValkeyServer::shutdown(std::chrono::steady_clock::time_point deadline) {
  // SHUTDOWN SAVE rather than SAVE then SHUTDOWN NOSAVE: a client's write between the two would be
  // acknowledged and then lost by the restart. SAVE snapshots even with no save points configured.
  timeval timeout = timeLeft(deadline);
  std::unique_ptr<redisContext, decltype(&redisFree)> c(redisConnectWithTimeout("127.0.0.1", port(), timeout),
                                                        &redisFree);
  if (!c || c->err) fail(fmt::format("cannot be reached to save its data for a restart: {}", c ? c->errstr : "out of memory"));
  redisSetTimeout(c.get(), timeout);
  auto* auth = static_cast<redisReply*>(redisCommand(c.get(), "AUTH %s", secret().c_str()));
  bool authed = auth && auth->type == REDIS_REPLY_STATUS;
  if (auth) freeReplyObject(auth);
  if (!authed) fail(fmt::format("refused its own secret before a restart: {}", c->err ? c->errstr : "AUTH failed"));
  if (auto* r = static_cast<redisReply*>(redisCommand(c.get(), "SHUTDOWN SAVE"))) {
    // A reply means it did not shut down (the snapshot failed: the reason is in its log).
    std::string why = r->str ? std::string(r->str, r->len) : "unexpected reply";
    freeReplyObject(r);
    fail("refused SHUTDOWN SAVE for a restart: " + why);
  }
  // No reply: it closed the connection as it exited (or the deadline passed while it was saving).
  if (!awaitExit(deadline)) fail("did not save and shut down in time for a restart");
  if (child_.poll()->code != 0) fail(fmt::format("ended with {} at SHUTDOWN SAVE", child_.poll()->str()));
}

void ValkeyServer::stop() {
  // No persistence of its own (save "", appendonly no: only restart() snapshots it) and a throwaway dir:
  // SIGKILL loses nothing, while SIGTERM is only acted on by serverCron, up to 100 ms later.
  if (child_.valid() && !child_.poll()) {
    child_.signalGroup(SIGKILL);
    child_.waitFor(std::chrono::hours(1));
  }
}

} // namespace idem::servers
