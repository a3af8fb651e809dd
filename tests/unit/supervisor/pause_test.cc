// The pause fault carried out by the real Hub and Controller against a fake Valkey: the group is stopped at
// the step, and woken before the withheld bytes go on, whatever releases it. The signals go to a recorder
// standing in for the supervisor's TargetProcesses.
#include "rig.h"

#include <catch2/catch.hpp>

#include <mutex>

using namespace idem;
using namespace idem::test;

namespace {

/// Records each stop and wake, and what the fake server had seen of the paused request at the wake.
struct SignalRecorder : GroupSignals {
  explicit SignalRecorder(const FakeServer& server) : server_(server) {}
  int stopGroup(int owner) override {
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back("SIGSTOP to " + std::to_string(owner));
    stopped = true;
    return 0;
  }
  bool continueGroup(int owner) override {
    std::lock_guard<std::mutex> lock(mu);
    if (!stopped) return false;
    stopped = false;
    calls.push_back("SIGCONT to " + std::to_string(owner));
    seenAtWake = server_.count();
    return true;
  }
  std::vector<std::string> log() {
    std::lock_guard<std::mutex> lock(mu);
    return calls;
  }
  std::mutex mu;
  std::vector<std::string> calls;
  bool stopped = false;
  size_t seenAtWake = 99;

private:
  const FakeServer& server_;
};

} // namespace

TEST_CASE("pause c1 before SET#1 until c2 after SET#1: stopped at its step, woken before its request goes on") {
  Rig rig({"pause:c1:before:SET#1:c2:after:SET#1"});
  SignalRecorder signals(rig.valkey);
  rig.ctl.setSignals(&signals);
  SecondProcess second(rig);
  RawClient c1(rig.ports.broker), c2(second.ports.broker);
  c1.send(resp({"SET", "a", "1"}));
  REQUIRE(waitUntil([&] { return rig.ctl.activeHolds().size() == 1; }));
  CHECK(rig.ctl.activeHolds()[0].pause);
  CHECK(signals.log() == std::vector<std::string>{"SIGSTOP to 1"});
  CHECK(rig.valkey.count() == 0);
  c2.send(resp({"SET", "b", "2"}));
  REQUIRE(c2.readN(5) == "+OK\r\n");
  CHECK(c1.readN(5) == "+OK\r\n");
  CHECK(signals.log() == std::vector<std::string>{"SIGSTOP to 1", "SIGCONT to 1"});
  CHECK(signals.seenAtWake == 1); // c2's SET only: c1's waited for its wake
  const auto faults = opsOf(rig.history, "fault");
  REQUIRE(faults.size() == 1);
  CHECK(faults[0].value["fault"] == "pause:c1:before:SET#1:c2:after:SET#1");
  CHECK(faults[0].value["signal"] == SIGSTOP);
  REQUIRE(rig.waitOps("note", 1));
  CHECK(opsOf(rig.history, "note")[0].value["message"] ==
        "pause pause:c1:before:SET#1:c2:after:SET#1 released: c2 reached c2:after:SET#1");
}

TEST_CASE("a pause the supervisor releases (its time, a lock wait, the run's end) wakes its process first") {
  Rig rig({"pause:after:SET#1:500"});
  SignalRecorder signals(rig.valkey);
  rig.ctl.setSignals(&signals);
  RawClient client(rig.ports.broker);
  client.send(resp({"SET", "a", "1"}));
  REQUIRE(waitUntil([&] { return rig.ctl.activeHolds().size() == 1; }));
  REQUIRE(rig.valkey.waitCount(1)); // after: it took effect, its reply waits with the stopped process
  rig.ctl.releaseHold(rig.ctl.activeHolds()[0].token.id, "500 ms passed");
  CHECK(client.readN(5) == "+OK\r\n");
  CHECK(signals.log() == std::vector<std::string>{"SIGSTOP to 1", "SIGCONT to 1"});
  REQUIRE(rig.waitOps("note", 1));
  CHECK(opsOf(rig.history, "note")[0].value["message"] == "pause pause:after:SET#1:500 released: 500 ms passed");
  CHECK(rig.ctl.activeHolds().empty());
}

TEST_CASE("a pause that stops no process does not fire: noted, and the step goes on") {
  Rig rig({"pause:before:SET#1"}); // no one to send the signals
  RawClient client(rig.ports.broker);
  client.send(resp({"SET", "a", "1"}));
  CHECK(client.readN(5) == "+OK\r\n");
  CHECK(rig.ctl.activeHolds().empty());
  CHECK(opsOf(rig.history, "fault").empty());
  REQUIRE(rig.waitOps("note", 1));
  CHECK(opsOf(rig.history, "note")[0].value["message"].get<std::string>().rfind(
            "pause point pause:before:SET#1 was reached but no signal was delivered", 0) == 0);
}
