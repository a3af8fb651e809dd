// The built-in fault kinds beyond kill, carried out by the real Hub and Controller against fake servers:
// what the server sees, what the client gets, what the history says. The PostgreSQL server's own
// transaction state after an injected error is checked against a real server in
// tests/integration/faults_test.cc; here, that the proxy hands the server a statement raising the error
// in place of the request, for simple and extended-protocol steps.
#include "rig.h"

#include "../proxy/pg_messages.h"
#include "proxy/errors.h"

#include <catch2/catch.hpp>

using namespace idem;
using namespace idem::test;
namespace wire = idem::proxy::test::pg;

namespace {

/// The SQL of every simple Query the fake PostgreSQL received.
std::vector<std::string> queries(const FakeServer& s) {
  std::vector<std::string> out;
  for (const auto& c : s.commands())
    if (c.size() == 2 && c[0] == "Q") out.push_back(c[1]);
  return out;
}

/// The server actions (forget, restart) the controller asked for, once there are any.
std::vector<Controller::ServerAction> serverActionsDue(Rig& rig) {
  std::vector<Controller::ServerAction> due;
  waitUntil([&] {
    due = rig.ctl.takeServerActions();
    return !due.empty();
  });
  return due;
}

bool raises(const std::string& sql, const std::string& code) {
  return sql.find("RAISE EXCEPTION USING ERRCODE = '" + code + "'") != std::string::npos;
}

} // namespace

TEST_CASE("error 40001 on a simple Query: the server runs a statement raising it instead, the step is answered") {
  Rig rig({"error:before:UPDATE#2:40001"});
  RawClient client(rig.ports.pg);
  pgStartup(client);
  client.send(wire::query("UPDATE t SET x = 1"));
  REQUIRE(client.readN(kPgUpdated.size()) == kPgUpdated);
  client.send(wire::query("UPDATE t SET x = 2"));
  // The fake answers any Query with CommandComplete: what matters is what it was sent.
  REQUIRE(client.readN(kPgUpdated.size() - 9).size() > 0);
  REQUIRE(rig.pg.waitCount(2));
  auto q = queries(rig.pg);
  REQUIRE(q.size() == 2);
  CHECK(q[0] == "UPDATE t SET x = 1");
  CHECK(raises(q[1], "40001"));
  CHECK(q[1].find("UPDATE t SET x = 2") == std::string::npos); // the request itself never reached the server
  REQUIRE(rig.waitOps("step", 2));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"UPDATE#1 ok", "UPDATE#2 answered"});
  auto faults = opsOf(rig.history, "fault");
  REQUIRE(faults.size() == 1);
  CHECK(faults[0].value["fault"] == "error:before:UPDATE#2:40001");
  CHECK(rig.child.alive()); // the process lives: it sees an error and handles it
}

TEST_CASE("error on an extended-protocol group ended by Sync: the whole group is replaced by the raising Query") {
  Rig rig({"error:before:INSERT#1:40P01"});
  RawClient client(rig.ports.pg);
  pgStartup(client);
  const std::string group = wire::parse("s1", "INSERT INTO t VALUES ($1)") + wire::bind("", "s1") +
                            wire::execute("") + wire::syncMessage();
  client.send(group);
  REQUIRE(rig.pg.waitCount(1));
  REQUIRE(rig.waitOps("step", 1));
  std::string got = rig.pg.received(0).substr(pg::startup().size());
  CHECK(got.find("INSERT INTO t") == std::string::npos); // no Parse, Bind, Execute or Sync went on
  CHECK(got[0] == 'Q');
  REQUIRE(queries(rig.pg).size() == 1);
  CHECK(raises(queries(rig.pg)[0], "40P01"));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"INSERT#1 answered"});
}

TEST_CASE("error on a group ended by Flush: not applied, noted, the group goes to the server unchanged") {
  Rig rig({"error:before:INSERT#1:40001"});
  RawClient client(rig.ports.pg);
  pgStartup(client);
  const std::string group =
      wire::parse("s1", "INSERT INTO t VALUES ($1)") + wire::bind("", "s1") + wire::execute("") + wire::flushMessage();
  client.send(group);
  REQUIRE(rig.pg.waitBytes(0, pg::startup().size() + group.size()));
  CHECK(rig.pg.received(0) == pg::startup() + group);
  REQUIRE(rig.waitOps("note", 1));
  CHECK(opsOf(rig.history, "note")[0].value["message"].get<std::string>().find("not applied") != std::string::npos);
  CHECK(opsOf(rig.history, "fault").empty());
}

TEST_CASE("error 57P01: FATAL to the client, the session ends, the server never sees the request") {
  Rig rig({"error:before:COMMIT#1:57P01"});
  RawClient client(rig.ports.pg);
  pgStartup(client);
  client.send(wire::query("COMMIT"));
  auto res = client.readUntilClosed();
  CHECK(res.closed);
  REQUIRE(!res.bytes.empty());
  CHECK(res.bytes[0] == 'E');
  CHECK(res.bytes.find("FATAL") != std::string::npos);
  CHECK(res.bytes.find("57P01") != std::string::npos);
  CHECK(res.bytes.find(wire::ready('I')) == std::string::npos); // no ReadyForQuery after a FATAL
  REQUIRE(rig.pg.waitClosed(1));
  CHECK(rig.pg.count() == 0);
  CHECK(stepLines(rig.history) == std::vector<std::string>{"COMMIT#1 answered"});
}

TEST_CASE("error LOADING on Valkey: the client gets the error, the command is not executed, the connection lives") {
  Rig rig({"error:before:SET#2:LOADING"});
  RawClient client(rig.ports.broker);
  client.send(resp({"SET", "a", "1"}));
  REQUIRE(client.readN(5) == "+OK\r\n");
  client.send(resp({"SET", "b", "2"}));
  const std::string want = "-LOADING the server is loading the dataset in memory\r\n";
  CHECK(client.readN(want.size()) == want);
  client.send(resp({"SET", "c", "3"}));
  REQUIRE(client.readN(5) == "+OK\r\n");
  REQUIRE(rig.valkey.waitCount(2));
  CHECK(rig.valkey.commands() == std::vector<std::vector<std::string>>{{"SET", "a", "1"}, {"SET", "c", "3"}});
  REQUIRE(rig.waitOps("step", 3));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"SET#1 ok", "SET#2 answered", "SET#3 ok"});
}

TEST_CASE("error at EXEC: the server discards the transaction, the client is told EXECABORT, and none at MULTI or a queued command") {
  Rig rig({"error:before:EXEC#1", "error:before:MULTI#2", "error:before:SET#3"});
  RawClient client(rig.ports.broker);
  // The fake answers every command +OK (a real server: +QUEUED inside MULTI); what matters is what it is sent.
  client.send(resp({"MULTI"}) + resp({"SET", "a", "1"}) + resp({"EXEC"}));
  REQUIRE(client.readN(10) == "+OK\r\n+OK\r\n");
  const std::string want = "-EXECABORT Transaction discarded because of previous errors.\r\n";
  CHECK(client.readN(want.size()) == want);
  REQUIRE(rig.valkey.waitCount(3));
  CHECK(rig.valkey.commands() == std::vector<std::vector<std::string>>{{"MULTI"}, {"SET", "a", "1"}, {"DISCARD"}});
  REQUIRE(rig.waitOps("step", 3));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"MULTI#1 ok", "SET#1 ok", "EXEC#1 answered"});
  CHECK(stepOf(rig.history, "EXEC", 1)["error"] == true);
  // Inside a transaction the server's state hangs on each reply: those faults are noted, not applied.
  client.send(resp({"MULTI"}) + resp({"SET", "b", "2"}) + resp({"SET", "c", "3"}) + resp({"EXEC"}));
  REQUIRE(client.readN(20) == "+OK\r\n+OK\r\n+OK\r\n+OK\r\n");
  REQUIRE(rig.valkey.waitCount(7));
  REQUIRE(rig.waitOps("note", 2));
  for (const auto& note : opsOf(rig.history, "note"))
    CHECK(note.value["message"].get<std::string>().find("part of a Valkey transaction") != std::string::npos);
  CHECK(stepOf(rig.history, "SET", 3)["in_multi"] == true);
}

TEST_CASE("error without a code: the transient error of the step's server") {
  Rig rig({"error:before:SET#1"});
  RawClient client(rig.ports.broker);
  client.send(resp({"SET", "a", "1"}));
  CHECK(client.readN(8) == "-LOADING");
  CHECK(rig.valkey.count() == 0);
}

TEST_CASE("a PostgreSQL error at a Valkey step is not applied: noted, the step goes on") {
  Rig rig({"error:before:SET#1:40001"});
  RawClient client(rig.ports.broker);
  client.send(resp({"SET", "a", "1"}));
  REQUIRE(client.readN(5) == "+OK\r\n");
  REQUIRE(rig.waitOps("note", 1));
  CHECK(opsOf(rig.history, "note")[0].value["message"].get<std::string>().find("40001 is a PostgreSQL error") !=
        std::string::npos);
  REQUIRE(rig.waitOps("step", 1));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"SET#1 ok"});
}

TEST_CASE("drop before UPDATE#2 on PostgreSQL: the server never sees it, the connection resets, the process lives") {
  Rig rig({"drop:before:UPDATE#2"});
  RawClient client(rig.ports.pg);
  pgStartup(client);
  client.send(wire::query("UPDATE t SET x = 1"));
  REQUIRE(client.readN(kPgUpdated.size()) == kPgUpdated);
  client.send(wire::query("UPDATE t SET x = 2"));
  auto res = client.readUntilClosed();
  CHECK(res.closed);
  CHECK(res.bytes.empty());
  REQUIRE(rig.pg.waitClosed(1));
  CHECK(rig.pg.count() == 1);
  CHECK(rig.child.alive());
  REQUIRE(rig.waitOps("fault", 1));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"UPDATE#1 ok", "UPDATE#2 dropped-before"});
  // The process reconnects: its new connection is proxied as before.
  RawClient again(rig.ports.pg);
  pgStartup(again);
  again.send(wire::query("UPDATE t SET x = 3"));
  CHECK(again.readN(kPgUpdated.size()) == kPgUpdated);
}

TEST_CASE("drop after COMMIT#1: the server commits, the client never learns it (the ambiguous commit)") {
  Rig rig({"drop:after:COMMIT#1"});
  RawClient client(rig.ports.pg);
  pgStartup(client);
  client.send(wire::query("COMMIT"));
  auto res = client.readUntilClosed();
  CHECK(res.closed);
  CHECK(res.bytes.empty());
  REQUIRE(rig.pg.waitCount(1)); // it reached the server
  CHECK(rig.child.alive());
  REQUIRE(rig.waitOps("step", 1));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"COMMIT#1 dropped-after"});
}

TEST_CASE("forget after SET#1: the reply waits until the harness has moved the broker back, then goes on") {
  Rig rig({"forget:after:SET#1"});
  RawClient client(rig.ports.broker);
  client.send(resp({"SET", "a", "1"}));
  auto due = serverActionsDue(rig);
  REQUIRE(due.size() == 1);
  CHECK(due[0].fault.str() == "forget:after:SET#1");
  CHECK(due[0].process == "c1");
  // Held until the action is done: no step recorded, no fault recorded yet.
  CHECK(opsOf(rig.history, "step").empty());
  CHECK(opsOf(rig.history, "fault").empty());
  rig.ctl.serverActionDone(due[0]);
  CHECK(client.readN(5) == "+OK\r\n");
  REQUIRE(rig.waitOps("step", 1));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"SET#1 ok"});
  auto faults = opsOf(rig.history, "fault");
  REQUIRE(faults.size() == 1);
  CHECK(faults[0].value["fault"] == "forget:after:SET#1");
  CHECK(faults[0].index < opsOf(rig.history, "step")[0].index); // the broker moved before the reply went on
}

TEST_CASE("delay after SET#1: the reply is held, then reaches the client, and the step is ok") {
  Rig rig({"delay:after:SET#1:30"});
  RawClient client(rig.ports.broker);
  client.send(resp({"SET", "a", "1"}));
  CHECK(client.readN(5) == "+OK\r\n");
  REQUIRE(rig.valkey.waitCount(1)); // it took effect before its reply was held
  REQUIRE(rig.waitOps("step", 1));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"SET#1 ok"});
  auto faults = opsOf(rig.history, "fault");
  REQUIRE(faults.size() == 1);
  CHECK(faults[0].value["fault"] == "delay:after:SET#1:30");
}

TEST_CASE("restart before SET#1: the request waits for the harness to restart the server, then goes on") {
  Rig rig({"restart:before:SET#1:valkey"});
  RawClient client(rig.ports.broker);
  client.send(resp({"SET", "a", "1"}));
  auto due = serverActionsDue(rig);
  REQUIRE(!due.empty());
  CHECK(due[0].fault.str() == "restart:before:SET#1:valkey");
  CHECK(rig.valkey.count() == 0); // held: the server has not seen it
  CHECK(rig.ctl.state(1).faulted == "restart:before:SET#1:valkey"); // every live process lives through it
  rig.ctl.serverActionDone(due[0]);
  CHECK(client.readN(5) == "+OK\r\n");
  REQUIRE(rig.valkey.waitCount(1));
}

TEST_CASE("error 53300 at CONNECT#2: the second PostgreSQL connection is refused at startup, the server never sees it") {
  Rig rig({"error:before:CONNECT#2:53300"});
  RawClient first(rig.ports.pg);
  pgStartup(first);
  RawClient second(rig.ports.pg);
  second.send(wire::startupPacket(80877103)); // SSLRequest: answered N, as by the tracker
  REQUIRE(second.readN(1) == "N");
  second.send(pg::startup());
  auto res = second.readUntilClosed();
  CHECK(res.closed);
  REQUIRE(!res.bytes.empty());
  CHECK(res.bytes[0] == 'E');
  CHECK(res.bytes.find("FATAL") != std::string::npos);
  CHECK(res.bytes.find("53300") != std::string::npos);
  CHECK(rig.pg.accepted() == 1); // only the first connection reached the server
  REQUIRE(rig.waitOps("step", 1));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"CONNECT#2 answered"});
  CHECK(opsOf(rig.history, "fault").at(0).value["fault"] == "error:before:CONNECT#2:53300");
  // The process lives, and its next connection goes through.
  CHECK(rig.child.alive());
  RawClient third(rig.ports.pg);
  pgStartup(third);
}

TEST_CASE("error 40001 at COMMIT: the server rolls back, the client gets the error and ReadyForQuery idle") {
  Rig rig({"error:before:COMMIT#1:40001"});
  RawClient client(rig.ports.pg);
  pgStartup(client);
  client.send(wire::query("COMMIT"));
  const std::string want =
      proxy::errorReply(proxy::Server::Pg, "40001", "could not serialize access due to concurrent update", 'I');
  CHECK(client.readN(want.size()) == want); // not the ROLLBACK's CommandComplete: the error, then 'I'
  REQUIRE(rig.pg.waitCount(1));
  CHECK(queries(rig.pg) == std::vector<std::string>{"ROLLBACK"}); // what a failed COMMIT does on the server
  REQUIRE(rig.waitOps("step", 1));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"COMMIT#1 answered"});
  CHECK(stepOf(rig.history, "COMMIT", 1)["error"] == true);
}

TEST_CASE("an error without a code ends the session at BEGIN (57P01), as PostgreSQL can, and is 40001 at UPDATE") {
  Rig rig({"error:before:BEGIN#1", "error:before:UPDATE#1"});
  RawClient client(rig.ports.pg);
  pgStartup(client);
  client.send(wire::query("BEGIN"));
  auto res = client.readUntilClosed();
  CHECK(res.closed);
  CHECK(res.bytes.find("FATAL") != std::string::npos);
  CHECK(res.bytes.find("57P01") != std::string::npos);
  REQUIRE(rig.waitOps("step", 1));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"BEGIN#1 answered"});
  CHECK(rig.pg.count() == 0); // the BEGIN never reached the server
  RawClient again(rig.ports.pg);
  pgStartup(again);
  again.send(wire::query("UPDATE t SET v = 1"));
  REQUIRE(rig.pg.waitCount(1));
  CHECK(queries(rig.pg).at(0).find("40001") != std::string::npos); // the server raises it itself
}

TEST_CASE("an error without a code at a round trip of Close and Sync alone ends the session (57P01), as PostgreSQL "
          "fails it no other way and a client that dropped a statement does not read the answer") {
  Rig rig({"error:before:CLOSE#1"});
  RawClient client(rig.ports.pg);
  pgStartup(client);
  client.send(wire::query("BEGIN"));
  REQUIRE(rig.pg.waitCount(1));
  REQUIRE(rig.waitOps("step", 1));
  client.send(wire::closeMessage('S', "s0") + wire::syncMessage());
  auto res = client.readUntilClosed();
  CHECK(res.closed);
  CHECK(res.bytes.find("FATAL") != std::string::npos);
  CHECK(res.bytes.find("57P01") != std::string::npos);
  REQUIRE(rig.waitOps("step", 2));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"BEGIN#1 ok", "CLOSE#1 answered"});
  CHECK(queries(rig.pg) == std::vector<std::string>{"BEGIN"}); // no statement raising 40001 in the transaction
}

TEST_CASE("hold c1 before SET#1 until c2 after SET#1: c2 runs freely, c1's request goes on once c2's reply is back") {
  Rig rig({"hold:c1:before:SET#1:c2:after:SET#1"});
  SecondProcess second(rig);
  const auto& ports2 = second.ports;
  RawClient c1(rig.ports.broker), c2(ports2.broker);
  c1.send(resp({"SET", "a", "1"}));
  REQUIRE(waitUntil([&] { return rig.ctl.activeHolds().size() == 1; }));
  CHECK(rig.valkey.count() == 0); // held: the server has not seen it
  c2.send(resp({"SET", "b", "2"}));
  REQUIRE(c2.readN(5) == "+OK\r\n");
  CHECK(c1.readN(5) == "+OK\r\n"); // released by c2's reply
  REQUIRE(rig.valkey.waitCount(2));
  CHECK(rig.valkey.commands() == std::vector<std::vector<std::string>>{{"SET", "b", "2"}, {"SET", "a", "1"}});
  CHECK(rig.ctl.activeHolds().empty());
  REQUIRE(rig.waitOps("note", 1));
  CHECK(opsOf(rig.history, "note")[0].value["message"] ==
        "hold hold:c1:before:SET#1:c2:after:SET#1 released: c2 reached c2:after:SET#1");
}

TEST_CASE("hold c2 after SET#1 until c1 after SET#1, which c1 passed already: released at once, and c2's step is "
          "recorded as any other") {
  // The reply goes on at once; the step must still be recorded and counted (a RabbitMQ consumer's
  // basic.consume left out of the history stayed a request waiting for its answer: the run never settled).
  Rig rig({"hold:c2:after:SET#1:c1:after:SET#1"});
  SecondProcess second(rig);
  RawClient c1(rig.ports.broker), c2(second.ports.broker);
  c1.send(resp({"SET", "a", "1"}));
  REQUIRE(c1.readN(5) == "+OK\r\n");
  REQUIRE(rig.waitOps("step", 1));
  c2.send(resp({"SET", "b", "2"}));
  CHECK(c2.readN(5) == "+OK\r\n");
  REQUIRE(rig.waitOps("step", 2));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"SET#1 ok", "SET#2 ok"});
  CHECK(opsOf(rig.history, "step")[1].process == "c2");
  CHECK(rig.ctl.inflightAll() == 0);
  REQUIRE(rig.waitOps("note", 1));
  CHECK(opsOf(rig.history, "note")[0].value["message"] ==
        "hold hold:c2:after:SET#1:c1:after:SET#1 released at once: c1 had passed c1:after:SET#1");
}

TEST_CASE("a hold the supervisor finds infeasible is released with its reason") {
  Rig rig({"hold:c1:after:SET#1"});
  RawClient client(rig.ports.broker);
  client.send(resp({"SET", "a", "1"}));
  REQUIRE(waitUntil([&] { return rig.ctl.activeHolds().size() == 1; }));
  REQUIRE(rig.valkey.waitCount(1)); // after: it took effect, its reply is held
  rig.ctl.releaseHold(rig.ctl.activeHolds()[0].token.id, "every other process is idle");
  CHECK(client.readN(5) == "+OK\r\n");
  REQUIRE(rig.waitOps("note", 1));
  CHECK(opsOf(rig.history, "note")[0].value["message"] == "hold hold:c1:after:SET#1 released: every other process is idle");
}
