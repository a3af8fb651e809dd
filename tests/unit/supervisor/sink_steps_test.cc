// CALL steps through the hub's sink side to a real sink server: an error answered by the proxy before the
// call (no execution), an error after it (executed, answer replaced), and a plain call, on one keep-alive
// connection.
#include "fakes.h"
#include "plan/fault.h"
#include "proxy/hub.h"
#include "supervisor/controller.h"
#include "supervisor/sink_server.h"

#include <catch2/catch.hpp>

using namespace idem;
using namespace idem::test;

namespace {

std::string sinkRequest(const std::string& body) {
  return "POST /charges HTTP/1.1\r\nHost: h\r\nIdempotency-Key: k-" + body.substr(body.size() - 3, 1) +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

/// One HTTP answer off the connection: its head and its Content-Length body.
std::string sinkAnswer(RawClient& c) {
  std::string got;
  while (got.find("\r\n\r\n") == std::string::npos) {
    std::string b = c.readN(1);
    if (b.empty()) return got;
    got += b;
  }
  const auto at = got.find("Content-Length: ");
  if (at == std::string::npos) return got;
  const size_t n = std::stoul(got.substr(at + 16));
  return got + c.readN(n);
}

} // namespace

TEST_CASE("sink steps: error before a CALL is not forwarded, after it the call executed") {
  SleepingChild child;
  FakeServer valkey(FakeServer::Proto::Resp);
  FakeServer pg(FakeServer::Proto::Pg);
  SinkServer sink;
  History history;
  Controller ctl(history, {Fault::parse("error:before:CALL#1"), Fault::parse("error:after:CALL#2:502")});
  proxy::Hub hub({"127.0.0.1", pg.port()}, {"127.0.0.1", valkey.port()}, ctl);
  ctl.setHub(&hub);
  SinkSpec spec;
  spec.booked = "SELECT 1";
  sink.reset(spec, true, &history);
  hub.setSink({{"127.0.0.1", sink.port()}, {spec.keyHeader, spec.ref}});
  ctl.addProcess(1, "c1");
  ctl.setPid(1, child.pid());
  const auto ports = hub.open(1);
  REQUIRE(ports.sink > 0);

  RawClient c(ports.sink);
  c.send(sinkRequest(R"({"event_id":"a"})"));
  std::string a = sinkAnswer(c);
  CHECK(a.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0) == 0);
  CHECK(a.find("(injected by idemproof)") != std::string::npos);
  c.send(sinkRequest(R"({"event_id":"b"})"));
  a = sinkAnswer(c);
  CHECK(a.rfind("HTTP/1.1 502 Bad Gateway\r\n", 0) == 0);
  c.send(sinkRequest(R"({"event_id":"c"})"));
  a = sinkAnswer(c);
  CHECK(a.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);

  CHECK(stepOf(history, "CALL", 1)["outcome"] == "answered");
  CHECK(stepOf(history, "CALL", 1)["server"] == "sink");
  CHECK(stepOf(history, "CALL", 2)["outcome"] == "answered");
  CHECK(stepOf(history, "CALL", 3)["outcome"] == "ok");
  CHECK(stepOf(history, "CALL", 3)["summary"] == "200");
  CHECK(stepOf(history, "CALL", 3)["detail"] == "POST /charges ref=c key=k-c");
  const auto calls = opsOf(history, "call"); // the first never reached the sink
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].value["ref"] == "b");
  CHECK(calls[0].value["outcome"] == "executed");
  CHECK(calls[1].value["ref"] == "c");
  CHECK(calls[1].value["execution"] == 2);
  CHECK(opsOf(history, "fault").size() == 2);
  sink.detach();
}
