#include "servers/valkey.h"

#include "core/error.h"
#include "servers/server_util.h"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <unistd.h>

#include <boost/process/search_path.hpp>
#include <fmt/format.h>

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

} // namespace

ValkeyServer::ValkeyServer() : ValkeyServer(findValkey()) {}

ValkeyServer::ValkeyServer(std::pair<fs::path, std::string> exe)
    : ServerProcess("idemproof-valkey-", "valkey.log", exe.second, exe.second), exe_(std::move(exe.first)),
      name_(std::move(exe.second)), account_(unprivilegedAccount()), conf_(dir_.path() / "valkey.conf") {
  // No local user gets in: every connection must AUTH with this server's secret (in a file private to
  // the server's account, not on its command line), and the commands that reach beyond the server's data
  // are gone (CONFIG could point its dir anywhere; DEBUG and MODULE are off by default since 7.0, and stay
  // off). It runs as an unprivileged account when idemproof is root.
  {
    std::ofstream out(conf_, std::ios::trunc);
    out << "requirepass " << secret() << "\n"
        << "rename-command CONFIG \"\"\n"
        << "enable-debug-command no\n"
        << "enable-module-command no\n";
    if (!out) throw UsageError(fmt::format("embedded {}: cannot write {}", name_, conf_.string()));
  }
  fs::permissions(conf_, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  if (account_.drop && ::chown(conf_.c_str(), account_.uid, account_.gid) != 0)
    throw UsageError(fmt::format("embedded {}: cannot chown {}", name_, conf_.string()));
}

ValkeyServer::~ValkeyServer() { stop(); }

ChildSpec ValkeyServer::command(int port) const {
  ChildSpec spec;
  spec.argv = {exe_.string(), conf_.string(), "--port", std::to_string(port), "--bind", "127.0.0.1",
               "--save", "", "--appendonly", "no", "--dir", dir_.path().string(),
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
  auto* r = static_cast<redisReply*>(redisCommand(c.get(), "INFO server"));
  if (!r) return Probe::NotYet;
  Probe result = Probe::NotYet;
  if (r->type == REDIS_REPLY_STRING) {
    std::string info(r->str, r->len);
    result = info.find(fmt::format("process_id:{}\r", child_.pid())) != std::string::npos ? Probe::Ours : Probe::Other;
  }
  freeReplyObject(r);
  return result;
}

void ValkeyServer::stop() {
  // No persistence (--save '', --appendonly no) and a throwaway dir: SIGKILL loses nothing, while
  // SIGTERM is only acted on by serverCron, up to 100 ms later.
  if (child_.valid() && !child_.poll()) {
    child_.signalGroup(SIGKILL);
    child_.waitFor(std::chrono::hours(1));
  }
}

} // namespace idem::servers
