// The proxy Hub and the Controller together, over real sockets: a raw client -> the hub's Valkey port ->
// a fake Valkey server. Kill points SIGKILL a real (sleeping) child process group; the fake server
// tells what reached the server, the client what reached the consumer, the History what was recorded.
#include "rig.h"

#include <catch2/catch.hpp>

using namespace idem;
using namespace idem::test;

namespace {

/// PING -> +PONG, GET -> a bulk string, everything else +OK.
std::string valkeyReply(const std::vector<std::string>& cmd) {
  if (cmd[0] == "PING") return "+PONG\r\n";
  if (cmd[0] == "GET") return "$5\r\nvalue\r\n";
  return "+OK\r\n";
}

/// Bytes that are not RESP: a multibulk header whose count is not a number, then binary.
const std::string kGarbage = std::string("*?garbage\r\n\x01\x02", 13) + std::string(1, '\0') + "\xff\r\n";

} // namespace

TEST_CASE("before:SET#2 withholds the request, records the kill and SIGKILLs the process group") {
  Rig rig({"before:SET#2"});
  RawClient client(rig.ports.broker);

  const std::string set1 = resp({"SET", "a", "1"}), set2 = resp({"SET", "b", "2"});
  client.send(set1);
  REQUIRE(client.readN(5) == "+OK\r\n");

  client.send(set2);
  auto res = client.readUntilClosed();
  CHECK(res.closed);         // the proxy cut the connection
  CHECK(res.bytes.empty());  // and no reply came for SET#2

  // Once the proxy has closed its upstream connection, nothing more can reach the server.
  REQUIRE(rig.valkey.waitClosed(1));
  CHECK(rig.valkey.count() == 1);
  CHECK(rig.valkey.received(0) == set1);
  CHECK(rig.valkey.sent(0) == "+OK\r\n");

  requireKilled(rig.child);

  CHECK(stepLines(rig.history) == std::vector<std::string>{"SET#1 ok", "SET#2 killed-before"});
  auto kills = opsOf(rig.history, "fault");
  REQUIRE(kills.size() == 1);
  CHECK(kills[0].process == "c1");
  CHECK(kills[0].value["fault"] == "before:SET#2");
  CHECK(kills[0].value["signal"] == SIGKILL);
  CHECK(opsOf(rig.history, "note").empty());
  auto step = stepOf(rig.history, "SET", 2);
  CHECK(step["server"] == "valkey");
  CHECK(step["detail"] == "SET b 2");

  auto st = rig.ctl.state(1);
  CHECK(st.killed);
  CHECK(st.killPoint == "before:SET#2");
  CHECK(st.inflight == 0);
  CHECK(rig.ctl.pendingFaults().empty());
  // The owner's listeners are closed too: a replacement process needs new ones.
  CHECK(connectRefused(rig.ports.broker));
}

TEST_CASE("after:SET#2 lets the server execute the request, withholds its reply and SIGKILLs") {
  Rig rig({"after:SET#2"});
  RawClient client(rig.ports.broker);

  const std::string set1 = resp({"SET", "a", "1"}), set2 = resp({"SET", "b", "2"});
  client.send(set1);
  REQUIRE(client.readN(5) == "+OK\r\n");

  client.send(set2);
  auto res = client.readUntilClosed();
  CHECK(res.closed);
  CHECK(res.bytes.empty()); // the server's "+OK" for SET#2 never reached the client

  // The server did receive and answer it.
  REQUIRE(rig.valkey.waitCount(2));
  CHECK(rig.valkey.received(0) == set1 + set2);
  REQUIRE(rig.valkey.waitClosed(1));
  CHECK(rig.valkey.sent(0) == "+OK\r\n+OK\r\n");

  requireKilled(rig.child);

  CHECK(stepLines(rig.history) == std::vector<std::string>{"SET#1 ok", "SET#2 killed-after"});
  auto step = stepOf(rig.history, "SET", 2);
  CHECK(step["summary"] == "+OK"); // the withheld reply is described
  auto kills = opsOf(rig.history, "fault");
  REQUIRE(kills.size() == 1);
  CHECK(kills[0].process == "c1");
  CHECK(kills[0].value["fault"] == "after:SET#2");
  CHECK(kills[0].index > opsOf(rig.history, "step").back().index);
  CHECK(opsOf(rig.history, "note").empty());
  CHECK(rig.ctl.state(1).killPoint == "after:SET#2");
}

TEST_CASE("pipelined after:SET#2: later requests were forwarded, only SET#1's reply reaches the client") {
  Rig rig({"after:SET#2"});
  // The server answers only once it holds all four requests: the pipeline is then known to have been
  // forwarded in full when the reply to SET#2 (the kill) reaches the proxy.
  rig.valkey.holdRepliesUntil(4);
  RawClient client(rig.ports.broker);

  const std::string batch =
      resp({"SET", "a", "1"}) + resp({"SET", "b", "2"}) + resp({"SET", "c", "3"}) + resp({"SET", "d", "4"});
  client.send(batch); // one write

  auto res = client.readUntilClosed();
  CHECK(res.closed);
  CHECK(res.bytes == "+OK\r\n"); // SET#1's reply only

  REQUIRE(rig.valkey.waitCount(4));
  CHECK(rig.valkey.received(0) == batch);
  auto cmds = rig.valkey.commands();
  REQUIRE(cmds.size() == 4);
  CHECK(cmds[2] == std::vector<std::string>{"SET", "c", "3"});
  CHECK(cmds[3] == std::vector<std::string>{"SET", "d", "4"});

  requireKilled(rig.child);

  REQUIRE(rig.waitOps("step", 4));
  CHECK(stepLines(rig.history) ==
        std::vector<std::string>{"SET#1 ok", "SET#2 killed-after", "SET#3 forwarded", "SET#4 forwarded"});
  auto kills = opsOf(rig.history, "fault");
  REQUIRE(kills.size() == 1);
  CHECK(kills[0].value["fault"] == "after:SET#2");
  auto st = rig.ctl.state(1);
  CHECK(st.inflight == 0);
  CHECK(st.steps == 4);
}

TEST_CASE("undecodable client bytes pass through unchanged and are recorded opaque") {
  // before:PING#2 must not fire on a PING sent after the opaque point: steps there are not counted.
  Rig rig({"before:PING#2"}, valkeyReply);
  RawClient client(rig.ports.broker);
  const std::string ping = resp({"PING"});
  std::string expected;
  uint64_t offset = 0;
  std::vector<std::string> steps;

  SECTION("as the first bytes") {
    expected = kGarbage + ping;
    client.send(expected);
    offset = 0;
  }
  SECTION("after a valid command, in the same write") {
    expected = ping + kGarbage + ping;
    client.send(expected);
    offset = ping.size();
    steps = {"PING#1 ok"};
    REQUIRE(client.readN(7) == "+PONG\r\n");
  }
  SECTION("after a valid command, in a later write") {
    client.send(ping);
    REQUIRE(client.readN(7) == "+PONG\r\n");
    client.send(kGarbage);
    client.send(ping);
    expected = ping + kGarbage + ping;
    offset = ping.size();
    steps = {"PING#1 ok"};
  }

  REQUIRE(rig.valkey.waitBytes(0, expected.size()));
  CHECK(rig.valkey.received(0) == expected); // byte for byte

  REQUIRE(rig.waitOps("opaque", 1));
  auto opaque = opsOf(rig.history, "opaque");
  REQUIRE(opaque.size() == 1);
  CHECK(opaque[0].process == "c1");
  CHECK(opaque[0].value["server"] == "valkey");
  CHECK(opaque[0].value["direction"] == "client");
  CHECK(opaque[0].value["conn"] == 1);
  CHECK(opaque[0].value["offset"] == offset);
  CHECK(opaque[0].value["reason"].get<std::string>().find("RESP") != std::string::npos);

  CHECK(stepLines(rig.history) == steps);
  CHECK(opsOf(rig.history, "fault").empty());
  CHECK(rig.ctl.pendingFaults().size() == 1);
  CHECK(rig.child.alive());
}

TEST_CASE("undecodable server bytes pass through unchanged and are recorded opaque") {
  const std::string garbled = std::string("\x01\x02 not resp\r\n", 13);
  Rig rig({}, [&](const std::vector<std::string>& cmd) { return cmd[0] == "GET" ? garbled : "+OK\r\n"; });
  RawClient client(rig.ports.broker);

  client.send(resp({"SET", "a", "1"}));
  REQUIRE(client.readN(5) == "+OK\r\n");
  client.send(resp({"GET", "a"}));
  CHECK(client.readN(garbled.size()) == garbled);

  REQUIRE(rig.waitOps("opaque", 1));
  auto opaque = opsOf(rig.history, "opaque");
  REQUIRE(opaque.size() == 1);
  CHECK(opaque[0].process == "c1");
  CHECK(opaque[0].value["server"] == "valkey");
  CHECK(opaque[0].value["direction"] == "server");
  CHECK(opaque[0].value["offset"] == 5); // after "+OK\r\n"
  // GET's reply passed through unobserved: it ends then, neither ok nor cut.
  CHECK(stepLines(rig.history) == std::vector<std::string>{"SET#1 ok", "GET#1 unobserved"});
}

TEST_CASE("without kill points every byte passes unchanged and every step is ok") {
  Rig rig({}, valkeyReply);
  RawClient client(rig.ports.broker);

  const std::string set1 = resp({"SET", "k1", "v1"}), set2 = resp({"SET", "k2", "v2"}), get1 = resp({"GET", "k1"});
  client.send(set1);
  CHECK(client.readN(5) == "+OK\r\n");
  client.send(set2);
  CHECK(client.readN(5) == "+OK\r\n");
  client.send(get1);
  CHECK(client.readN(11) == "$5\r\nvalue\r\n");

  // A second connection of the same process, pipelined: counting goes on over the run.
  RawClient second(rig.ports.broker);
  const std::string batch = resp({"SET", "k3", "v3"}) + resp({"GET", "k3"});
  second.send(batch);
  CHECK(second.readN(16) == "+OK\r\n$5\r\nvalue\r\n");

  CHECK(rig.valkey.received(0) == set1 + set2 + get1);
  CHECK(rig.valkey.sent(0) == "+OK\r\n+OK\r\n$5\r\nvalue\r\n");
  CHECK(rig.valkey.received(1) == batch);

  REQUIRE(rig.waitOps("step", 5));
  CHECK(stepLines(rig.history) ==
        std::vector<std::string>{"SET#1 ok", "SET#2 ok", "GET#1 ok", "SET#3 ok", "GET#2 ok"});
  auto s1 = stepOf(rig.history, "SET", 1);
  CHECK(s1["server"] == "valkey");
  CHECK(s1["conn"] == 1);
  CHECK(s1["detail"] == "SET k1 v1");
  CHECK(s1["summary"] == "+OK");
  auto g1 = stepOf(rig.history, "GET", 1);
  CHECK(g1["detail"] == "GET k1");
  CHECK(g1["summary"] == "\"value\"");
  CHECK(stepOf(rig.history, "SET", 3)["conn"] == 2);
  for (const auto& op : opsOf(rig.history, "step")) CHECK(op.process == "c1");

  client.close();
  second.close();
  REQUIRE(rig.valkey.waitClosed(2));
  auto st = rig.ctl.state(1);
  CHECK(st.steps == 5);
  CHECK(st.inflight == 0);
  CHECK_FALSE(st.killed);
  CHECK(rig.hub.connections(1) == 2);
  CHECK(opsOf(rig.history, "step").size() == 5); // closing cut nothing
  CHECK(opsOf(rig.history, "fault").empty());
  CHECK(opsOf(rig.history, "note").empty());
  CHECK(opsOf(rig.history, "opaque").empty());
  CHECK(rig.child.alive());
}

TEST_CASE("a kill point on a process with no live process group: a note, no kill op, the connection cut") {
  const pid_t gone = reapedPid();
  std::string point;
  size_t reached = 0;
  SECTION("before") {
    point = "before:SET#1";
    reached = 0;
  }
  SECTION("after") {
    point = "after:SET#1";
    reached = 1;
  }
  Rig rig({point}, {}, gone);
  RawClient client(rig.ports.broker);
  client.send(resp({"SET", "a", "1"}));

  auto res = client.readUntilClosed();
  CHECK(res.closed);
  CHECK(res.bytes.empty());
  REQUIRE(rig.valkey.waitClosed(1));
  CHECK(rig.valkey.count() == reached);

  CHECK(opsOf(rig.history, "fault").empty());
  // The step ended as the proxy cut it, not as a kill: withheld before, forwarded after.
  CHECK(stepLines(rig.history) == std::vector<std::string>{reached ? "SET#1 forwarded" : "SET#1 withheld"});
  auto notes = opsOf(rig.history, "note");
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].process == "c1");
  const std::string message = notes[0].value.value("message", "");
  CHECK(message.find("no signal was delivered") != std::string::npos);
  CHECK(message.find(point) != std::string::npos);

  auto st = rig.ctl.state(1);
  CHECK(st.killed);            // cut either way: the supervisor must replace it
  CHECK(st.killPoint.empty()); // but no kill point fired on it
  CHECK(rig.child.alive());    // the rig's own child was never the target
}

TEST_CASE("VERB#k counts over the whole run: the kill hits the process that sends the k-th") {
  Rig rig({"before:SET#2"});
  SecondProcess second(rig);
  SleepingChild& child2 = second.child;
  const auto& ports2 = second.ports;

  RawClient c1(rig.ports.broker), c2(ports2.broker);
  c1.send(resp({"SET", "a", "1"}));
  REQUIRE(c1.readN(5) == "+OK\r\n");
  c2.send(resp({"SET", "b", "2"})); // SET#2 of the run
  auto res = c2.readUntilClosed();
  CHECK(res.closed);
  CHECK(res.bytes.empty());
  requireKilled(child2);

  c1.send(resp({"SET", "c", "3"})); // c1 is untouched
  CHECK(c1.readN(5) == "+OK\r\n");
  CHECK(rig.child.alive());

  REQUIRE(rig.waitOps("step", 3));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"SET#1 ok", "SET#2 killed-before", "SET#3 ok"});
  auto steps = opsOf(rig.history, "step");
  CHECK(steps[0].process == "c1");
  CHECK(steps[1].process == "c2");
  CHECK(steps[2].process == "c1");
  auto kills = opsOf(rig.history, "fault");
  REQUIRE(kills.size() == 1);
  CHECK(kills[0].process == "c2");
  CHECK(rig.ctl.state(2).killed);
  CHECK_FALSE(rig.ctl.state(1).killed);
}

TEST_CASE("cN:VERB#k counts one process's steps: c1:before:SET#2 waits for c1's second SET, whatever c2 sends") {
  Rig rig({"c1:before:SET#2"});
  SecondProcess second(rig);
  SleepingChild& child2 = second.child;
  const auto& ports2 = second.ports;

  RawClient c1(rig.ports.broker), c2(ports2.broker);
  c1.send(resp({"SET", "a", "1"}));
  REQUIRE(c1.readN(5) == "+OK\r\n");
  c2.send(resp({"SET", "b", "2"})); // SET#2 of the run, but c2's: untouched
  REQUIRE(c2.readN(5) == "+OK\r\n");
  c1.send(resp({"SET", "c", "3"})); // c1's second SET (SET#3 of the run)
  auto res = c1.readUntilClosed();
  CHECK(res.closed);
  requireKilled(rig.child);
  CHECK(child2.alive());
  auto kills = opsOf(rig.history, "fault");
  REQUIRE(kills.size() == 1);
  CHECK(kills[0].process == "c1");
  CHECK(kills[0].value["fault"] == "c1:before:SET#2");
}

// A request the proxy already handed to the socket is "forwarded" (the server may have executed it), even
// when the kill fires in the same read, before the write's completion handler ran: Asio sends at once when
// a write starts. Found by this test (the proxy counted bytes as sent only in the completion handler).
TEST_CASE("pipelined before:SET#2: SET#1, already sent, is recorded forwarded", "[hub]") {
  Rig rig({"before:SET#2"});
  RawClient client(rig.ports.broker);
  const std::string set1 = resp({"SET", "a", "1"});
  client.send(set1 + resp({"SET", "b", "2"})); // one write

  auto res = client.readUntilClosed();
  CHECK(res.closed);
  CHECK(res.bytes.empty());
  REQUIRE(rig.valkey.waitClosed(1));
  requireKilled(rig.child);

  // The server got SET#1 and executed it ...
  CHECK(rig.valkey.received(0) == set1);
  CHECK(rig.valkey.count() == 1);
  // ... so its step must not say it never left the proxy.
  REQUIRE(rig.waitOps("step", 2)); // the cut step is recorded just after the sockets close
  CHECK(stepLines(rig.history) == std::vector<std::string>{"SET#2 killed-before", "SET#1 forwarded"});
}
