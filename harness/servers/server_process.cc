// ServerProcess: launch and readiness of an embedded server.
#include "servers/server_process.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace idem::servers {

ServerProcess::ServerProcess(const std::string& tempPrefix, const std::string& logName, std::string name,
                             std::string logKeep)
    : dir_(tempPrefix), log_(dir_.path() / logName), name_(std::move(name)), logKeep_(std::move(logKeep)) {}

void ServerProcess::launch(int port) {
  port_ = port;
  logOffset_ = fileSize(log_);
  ChildSpec spec = command(port);
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

Readiness ServerProcess::awaitReady(std::chrono::steady_clock::time_point deadline) {
  while (true) {
    if (auto status = child_.poll()) {
      if (portTakenIn(log_, logOffset_)) return Readiness::PortTaken;
      fail(fmt::format("exited at start ({})", status->str()));
    }
    Probe p = probe();
    if (p == Probe::Ours) return Readiness::Ready;
    if (p == Probe::Other) {
      // Someone else answers on our port: ours fails to bind and exits, seen at the top next time.
      child_.waitFor(std::chrono::milliseconds(100));
      if (std::chrono::steady_clock::now() > deadline) fail("did not become ready: another server answers on its port");
      continue;
    }
    if (std::chrono::steady_clock::now() > deadline) fail("did not become ready in time");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void ServerProcess::restart(std::chrono::steady_clock::time_point deadline) {
  if (!child_.valid()) fail("cannot be restarted: it was never started");
  if (auto status = child_.poll()) fail(fmt::format("cannot be restarted: it had already exited ({})", status->str()));
  shutdown(deadline);
  launch(port_); // the same port, never another one
  if (awaitReady(deadline) == Readiness::PortTaken)
    fail("could not bind its port again after a restart (Address already in use: another process took it)");
}

bool ServerProcess::awaitExit(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return child_.waitFor(std::max(left, std::chrono::milliseconds(0))).has_value();
}

void ServerProcess::fail(const std::string& why) {
  std::string tail = serverLogTail(log_, logOffset_);
  stop();
  throw UsageError(fmt::format("embedded {} on port {} {} (log: {}): {}", name_, port_, why,
                               keepLog(log_, logKeep_).string(), tail));
}

} // namespace idem::servers
