// One-way steps over real sockets (proxy::StepInfo::oneWay): a NATS publish gets no reply, so its step
// ends when the proxy hands it to the server, and an after: fault fires then. The broker side is the NATS
// tracker in front of a fake server that records what reaches it and answers nothing.
#include "rig.h"

#include "brokers/nats/tracker.h"

#include <catch2/catch.hpp>

using namespace idem;
using namespace idem::test;

namespace {

const std::string kAckSubject = "$JS.ACK.events_1.consumers_1.1.3.3.1700000000000000000.0";
const std::string kAck = "PUB " + kAckSubject + " 4\r\n+ACK\r\n";

/// One consumer process behind a hub whose broker side speaks NATS.
struct NatsRig {
  SleepingChild child;
  FakeServer nats{FakeServer::Proto::Resp}; // NATS bytes are no RESP: recorded, never answered
  FakeServer pg{FakeServer::Proto::Pg};
  History history;
  Controller ctl;
  proxy::Hub hub;
  proxy::Hub::Ports ports;

  explicit NatsRig(const std::vector<std::string>& kills)
      : ctl(history, killPoints(kills)),
        hub({"127.0.0.1", pg.port()},
            proxy::BrokerSide{"nats", "NATS", {"127.0.0.1", nats.port()}, [](int) { return nats::makeTracker(); }, {}, {}},
            ctl) {
    ctl.setHub(&hub);
    ctl.addProcess(1, "c1");
    ctl.setPid(1, child.pid());
    ports = hub.open(1);
  }
};

} // namespace

TEST_CASE("one-way steps: an ACK ends when the proxy hands it on, with no reply from the server") {
  NatsRig rig({});
  RawClient client(rig.ports.broker);
  client.send(kAck);
  REQUIRE(rig.nats.waitBytes(0, kAck.size()));
  CHECK(rig.nats.received(0) == kAck);
  REQUIRE(waitUntil([&] { return stepLines(rig.history).size() == 1; }));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"ACK#1 ok"});
  CHECK(stepOf(rig.history, "ACK", 1)["server"] == "nats");
  CHECK(rig.ctl.state(1).inflight == 0);
}

TEST_CASE("one-way steps: after:ACK#1 fires once the ACK is handed to the server and kills the process") {
  NatsRig rig({"after:ACK#1"});
  RawClient client(rig.ports.broker);
  client.send(kAck);
  requireKilled(rig.child);
  REQUIRE(rig.nats.waitBytes(0, kAck.size()));
  CHECK(rig.nats.received(0) == kAck);
  // The step is recorded by the proxy's thread after the signal: the process may be dead before it is.
  REQUIRE(waitUntil([&] { return !stepLines(rig.history).empty(); }));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"ACK#1 killed-after"});
}

TEST_CASE("one-way steps: before:ACK#1 withholds the ACK and kills the process") {
  NatsRig rig({"before:ACK#1"});
  RawClient client(rig.ports.broker);
  client.send(kAck);
  requireKilled(rig.child);
  REQUIRE(rig.nats.waitClosed(1));
  CHECK(rig.nats.received(0).empty());
  REQUIRE(waitUntil([&] { return !stepLines(rig.history).empty(); }));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"ACK#1 killed-before"});
}
