#pragma once
/// One consumer process ("c1", owner 1) behind a real proxy Hub and Controller, with fake servers.
#include "fakes.h"
#include "plan/fault.h"
#include "proxy/hub.h"
#include "supervisor/controller.h"

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <csignal>
#include <string>
#include <vector>

namespace idem::test {

inline std::vector<Fault> killPoints(const std::vector<std::string>& texts) {
  std::vector<Fault> out;
  for (const auto& t : texts) out.push_back(Fault::parse(t));
  return out;
}

/// Members in construction order: the child is forked before any thread starts; the hub is destroyed
/// first (it calls the controller while it cuts), the child last (killed and reaped if still there).
struct Rig {
  SleepingChild child;
  FakeServer valkey;
  FakeServer pg;
  History history;
  Controller ctl;
  proxy::Hub hub;
  proxy::Hub::Ports ports;

  /// `pid`: the process group given to the controller (default: the sleeping child's).
  explicit Rig(const std::vector<std::string>& kills, FakeServer::ReplyFn valkeyReply = {}, pid_t pid = 0)
      : valkey(FakeServer::Proto::Resp, std::move(valkeyReply)), pg(FakeServer::Proto::Pg),
        ctl(history, killPoints(kills)), hub({"127.0.0.1", pg.port()}, {"127.0.0.1", valkey.port()}, ctl) {
    ctl.setHub(&hub);
    ctl.addProcess(1, "c1");
    ctl.setPid(1, pid ? pid : child.pid());
    ports = hub.open(1);
  }

  /// Waits for `n` ops of `type` in the history.
  bool waitOps(const std::string& type, size_t n, Ms timeout = kTimeout) {
    return waitUntil([&] { return opsOf(history, type).size() >= n; }, timeout);
  }
};

/// A second consumer process ("c2", owner 2) on the rig's hub and controller.
struct SecondProcess {
  SleepingChild child;
  proxy::Hub::Ports ports;
  explicit SecondProcess(Rig& rig) {
    rig.ctl.addProcess(2, "c2");
    rig.ctl.setPid(2, child.pid());
    ports = rig.hub.open(2);
  }
};

/// What the fake PostgreSQL answers: after startup, after any Query.
inline const std::string kPgHello = std::string("R") + pg::i32(8) + pg::i32(0) + "Z" + pg::i32(5) + "I";
inline const std::string kPgUpdated =
    std::string("C") + pg::i32(13) + std::string("UPDATE 1") + '\0' + "Z" + pg::i32(5) + "I";

/// Connects and completes the startup (no step).
inline void pgStartup(RawClient& c) {
  c.send(pg::startup());
  REQUIRE(c.readN(kPgHello.size()) == kPgHello);
}

/// Asserts the child exits, killed by SIGKILL.
inline void requireKilled(SleepingChild& child) {
  auto st = child.waitExit();
  REQUIRE(st.has_value());
  REQUIRE(WIFSIGNALED(*st));
  REQUIRE(WTERMSIG(*st) == SIGKILL);
}

} // namespace idem::test
