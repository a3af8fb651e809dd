// One-way steps over real sockets (proxy::StepInfo::oneWay): a NATS publish gets no reply, so its step
// ends when the proxy hands it to the server, and an after: fault fires then. The broker side is the NATS
// tracker in front of a fake server that records what reaches it and answers nothing.
#include "rig.h"

#include "brokers/nats/tracker.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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

namespace {

/// A NATS server the test speaks for itself: it accepts the proxy's connection and sends what the test says.
class ScriptedServer {
public:
  ScriptedServer() {
    listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(listen_, 4) == 0);
    socklen_t len = sizeof a;
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~ScriptedServer() {
    if (conn_ >= 0) ::close(conn_);
    ::close(listen_);
  }
  int port() const { return port_; }
  void accept() { conn_ = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC); }
  /// Reads until `text` has arrived (or the connection ends).
  bool readUntil(const std::string& text) {
    char buf[4096];
    while (in_.find(text) == std::string::npos) {
      ssize_t n = ::recv(conn_, buf, sizeof buf, 0);
      if (n <= 0) return false;
      in_.append(buf, size_t(n));
    }
    return true;
  }
  void send(const std::string& bytes) { REQUIRE(::send(conn_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size())); }

private:
  int listen_ = -1, conn_ = -1, port_ = 0;
  std::string in_;
};

std::string delivery(int seq) {
  const std::string reply = "$JS.ACK.events_1.consumers_1.1." + std::to_string(seq) + "." + std::to_string(seq) +
                            ".1700000000000000000.0";
  const std::string headers = "NATS/1.0\r\n\r\n", payload = "{\"n\":\"" + std::to_string(seq) + "\"}";
  return "HMSG events.1 1 " + reply + " " + std::to_string(headers.size()) + " " +
         std::to_string(headers.size() + payload.size()) + "\r\n" + headers + payload + "\r\n";
}

} // namespace

TEST_CASE("one-way steps: an ACK held after it was handed on while a message the server pushed is held: each "
          "goes on in its own time, neither is lost") {
  // The push (FETCH#2, the second message of a pull for 2) is held 300 ms; the ACK of the first message,
  // sent meanwhile, is held 50 ms after it reached the server (as a delay or a restart after it holds it).
  ScriptedServer nats;
  SleepingChild child;
  FakeServer pg(FakeServer::Proto::Pg);
  History history;
  Controller ctl(history, killPoints({"delay:after:FETCH#2:300", "delay:after:ACK#1:50"}));
  proxy::Hub hub({"127.0.0.1", pg.port()},
                 proxy::BrokerSide{"nats", "NATS", {"127.0.0.1", nats.port()}, [](int) { return nats::makeTracker(); }, {}, {}},
                 ctl);
  ctl.setHub(&hub);
  ctl.addProcess(1, "c1");
  ctl.setPid(1, child.pid());
  const proxy::Hub::Ports ports = hub.open(1);

  RawClient client(ports.broker);
  const std::string pullBody = "{\"batch\":2,\"expires\":5000000000}";
  const std::string pull = "PUB $JS.API.CONSUMER.MSG.NEXT.events_1.consumers_1 _INBOX.b.1 " +
                           std::to_string(pullBody.size()) + "\r\n" + pullBody + "\r\n";
  client.send("SUB _INBOX.b.* 1\r\n" + pull);
  nats.accept();
  REQUIRE(nats.readUntil("expires"));
  nats.send(delivery(1) + delivery(2));
  REQUIRE(client.readN(delivery(1).size()) == delivery(1));
  const std::string ack = "PUB $JS.ACK.events_1.consumers_1.1.1.1.1700000000000000000.0 4\r\n+ACK\r\n";
  client.send(ack);
  REQUIRE(nats.readUntil("+ACK"));
  // The held push reaches the client once its 300 ms passed (the ACK's hold did not take its place).
  CHECK(client.readN(delivery(2).size()) == delivery(2));
  REQUIRE(waitUntil([&] { return stepLines(history).size() == 3; }));
  CHECK(stepLines(history) == std::vector<std::string>{"FETCH#1 ok", "ACK#1 ok", "FETCH#2 ok"});
  CHECK(ctl.state(1).inflight == 0);
}
