#include "servers/valkey.h"

#include "core/error.h"
#include "servers/server_util.h"

#include <hiredis/hiredis.h>
#include <signal.h>

#include <boost/process/search_path.hpp>
#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <thread>

namespace fs = std::filesystem;

namespace idem::servers {
namespace {

fs::path findValkey(std::string& name) {
  for (const char* candidate : {"valkey-server", "redis-server"}) {
    auto p = boost::process::search_path(candidate);
    if (!p.empty()) {
      name = candidate;
      return p.string();
    }
  }
  throw UsageError("embedded Valkey: neither valkey-server nor redis-server is on PATH "
                   "(install one, or pass --valkey-url)");
}

} // namespace

ValkeyServer::ValkeyServer() : exe_(findValkey(name_)), dir_("idemproof-valkey-"), log_(dir_.path() / "valkey.log") {}

ValkeyServer::~ValkeyServer() { stop(); }

void ValkeyServer::launch(int port) {
  port_ = port;
  logOffset_ = fileSize(log_);
  ChildSpec spec;
  spec.argv = {exe_.string(), "--port", std::to_string(port), "--bind", "127.0.0.1",
               "--save", "", "--appendonly", "no", "--dir", dir_.path().string(),
               "--daemonize", "no", "--protected-mode", "no", "--databases", "64"};
  spec.cwd = dir_.path();
  spec.env = serverEnv();
  spec.log = log_;
  spec.what = "embedded " + name_;
  try {
    child_ = Child::spawn(spec);
  } catch (const SpawnError& e) {
    throw UsageError(e.what());
  }
}

ValkeyServer::Ping ValkeyServer::ping() const {
  timeval timeout{1, 0};
  std::unique_ptr<redisContext, decltype(&redisFree)> c(redisConnectWithTimeout("127.0.0.1", port_, timeout),
                                                        &redisFree);
  if (!c || c->err) return Ping::No;
  redisSetTimeout(c.get(), timeout);
  auto* r = static_cast<redisReply*>(redisCommand(c.get(), "INFO server"));
  if (!r) return Ping::No;
  Ping result = Ping::No;
  if (r->type == REDIS_REPLY_STRING) {
    std::string info(r->str, r->len);
    result = info.find(fmt::format("process_id:{}\r", child_.pid())) != std::string::npos ? Ping::Ours : Ping::Other;
  }
  freeReplyObject(r);
  return result;
}

Readiness ValkeyServer::awaitReady(std::chrono::steady_clock::time_point deadline) {
  while (true) {
    if (auto status = child_.poll()) {
      if (portTakenIn(log_, logOffset_)) return Readiness::PortTaken;
      fail(fmt::format("exited at start ({})", status->str()));
    }
    Ping p = ping();
    if (p == Ping::Ours) return Readiness::Ready;
    if (p == Ping::Other) {
      // Someone else answers on our port: ours fails to bind and exits, seen at the top next time.
      child_.waitFor(std::chrono::milliseconds(100));
      if (std::chrono::steady_clock::now() > deadline) fail("did not become ready: another server answers on its port");
      continue;
    }
    if (std::chrono::steady_clock::now() > deadline) fail("did not become ready in time");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void ValkeyServer::fail(const std::string& why) {
  std::string tail = logTail(log_, logOffset_);
  stop();
  throw UsageError(fmt::format("embedded {} on port {} {} (log: {}): {}", name_, port_, why,
                               keepLog(log_, name_).string(), tail));
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
