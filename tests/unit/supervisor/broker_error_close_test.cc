// An error fault whose answer in the broker's name ends the connection (AMQP's connection.close:
// Broker::errorEndsConnection), through a real Hub and Controller with a fake server: the client gets the
// answer and then the connection closes; what it sent after the failed request never reaches the server.
#include "rig.h"

using namespace idem;
using namespace idem::test;

TEST_CASE("an error answer that ends the broker's connection: nothing sent after it reaches the server") {
  SleepingChild child;
  FakeServer valkey(FakeServer::Proto::Resp), pg(FakeServer::Proto::Pg);
  History history;
  Controller ctl(history, killPoints({"error:before:SET#2:LOADING"}));
  proxy::BrokerSide side{"valkey", "RESP", {"127.0.0.1", valkey.port()}, [](int) { return proxy::makeRespTracker(); },
                         {}, {}};
  side.errorAnswer = [](std::string_view, const std::string& code) -> std::optional<std::string> {
    return "-" + code + " closing\r\n";
  };
  side.defaultError = [](const std::string&) { return std::string("CONNECTION_FORCED"); };
  side.errorEndsConnection = true;
  proxy::Hub hub({"127.0.0.1", pg.port()}, side, ctl);
  ctl.setHub(&hub);
  ctl.addProcess(1, "c1");
  ctl.setPid(1, child.pid());
  const proxy::Hub::Ports ports = hub.open(1);

  RawClient client(ports.broker);
  const std::string set1 = resp({"SET", "a", "1"});
  client.send(set1);
  REQUIRE(client.readN(5) == "+OK\r\n");
  // The failed request and one sent right behind it, before the client could read the answer (an
  // acknowledgement already on its way).
  client.send(resp({"SET", "b", "2"}) + resp({"SET", "c", "3"}));
  auto res = client.readUntilClosed();
  CHECK(res.closed);
  CHECK(res.bytes == "-LOADING closing\r\n");
  REQUIRE(valkey.waitClosed(1));
  CHECK(valkey.received(0) == set1);
  // The process lives on with its connection gone: it reconnects by itself.
  CHECK(ctl.state(1).cutAt == "SET#2 (valkey)");
  CHECK_FALSE(ctl.state(1).killed);
}
