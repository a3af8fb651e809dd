// The same kill points over the PostgreSQL proxy: simple Query ('Q') steps against a fake server.
#include "rig.h"

#include "../proxy/pg_messages.h"

#include <catch2/catch.hpp>

using namespace idem;
using namespace idem::test;


TEST_CASE("pg: before:UPDATE#2 withholds the query and SIGKILLs") {
  Rig rig({"before:UPDATE#2"});
  RawClient client(rig.ports.pg);
  pgStartup(client);
  const std::string q1 = pg::query("UPDATE t SET x = 1"), q2 = pg::query("update t SET x = 2");
  client.send(q1);
  REQUIRE(client.readN(kPgUpdated.size()) == kPgUpdated);
  client.send(q2);

  auto res = client.readUntilClosed();
  CHECK(res.closed);
  CHECK(res.bytes.empty());
  REQUIRE(rig.pg.waitClosed(1));
  CHECK(rig.pg.count() == 1);
  CHECK(rig.pg.received(0) == pg::startup() + q1);
  requireKilled(rig.child);

  CHECK(stepLines(rig.history) == std::vector<std::string>{"UPDATE#1 ok", "UPDATE#2 killed-before"});
  auto s1 = stepOf(rig.history, "UPDATE", 1);
  CHECK(s1["server"] == "pg");
  CHECK(s1["summary"] == "UPDATE 1");
  CHECK(stepOf(rig.history, "UPDATE", 2)["detail"] == "update t SET x = 2");
  auto kills = opsOf(rig.history, "fault");
  REQUIRE(kills.size() == 1);
  CHECK(kills[0].value["fault"] == "before:UPDATE#2");
}

TEST_CASE("pg: after:UPDATE#2 lets the server execute the query and withholds its reply") {
  Rig rig({"after:UPDATE#2"});
  RawClient client(rig.ports.pg);
  pgStartup(client);
  const std::string q1 = pg::query("UPDATE t SET x = 1"), q2 = pg::query("UPDATE t SET x = 2");
  client.send(q1);
  REQUIRE(client.readN(kPgUpdated.size()) == kPgUpdated);
  client.send(q2);

  auto res = client.readUntilClosed();
  CHECK(res.closed);
  CHECK(res.bytes.empty());
  REQUIRE(rig.pg.waitCount(2));
  CHECK(rig.pg.commands()[1] == std::vector<std::string>{"Q", "UPDATE t SET x = 2"});
  REQUIRE(rig.pg.waitClosed(1));
  CHECK(rig.pg.sent(0) == kPgHello + kPgUpdated + kPgUpdated);
  requireKilled(rig.child);

  CHECK(stepLines(rig.history) == std::vector<std::string>{"UPDATE#1 ok", "UPDATE#2 killed-after"});
  auto kills = opsOf(rig.history, "fault");
  REQUIRE(kills.size() == 1);
  CHECK(kills[0].value["fault"] == "after:UPDATE#2");
}

TEST_CASE("pg: without kill points bytes pass unchanged, verbs count per verb over both servers") {
  Rig rig({});
  RawClient pgc(rig.ports.pg), kv(rig.ports.broker);
  pgStartup(pgc);
  const std::string begin = pg::query("BEGIN"), ins = pg::query("INSERT INTO t VALUES (1)"),
                    commit = pg::query("COMMIT");
  const std::string beginReply = proxy::test::pg::complete("BEGIN") + proxy::test::pg::ready('I');
  const std::string insReply = proxy::test::pg::complete("INSERT 0 1") + proxy::test::pg::ready('I');
  const std::string commitReply = proxy::test::pg::complete("COMMIT") + proxy::test::pg::ready('I');
  pgc.send(begin + ins + commit); // pipelined
  CHECK(pgc.readN(beginReply.size() + insReply.size() + commitReply.size()) == beginReply + insReply + commitReply);
  kv.send(resp({"SET", "a", "1"}));
  CHECK(kv.readN(5) == "+OK\r\n");
  pgc.send(pg::query("INSERT INTO t VALUES (2)"));
  CHECK(pgc.readN(insReply.size()) == insReply);

  CHECK(rig.pg.received(0) == pg::startup() + begin + ins + commit + pg::query("INSERT INTO t VALUES (2)"));
  REQUIRE(rig.waitOps("step", 5));
  CHECK(stepLines(rig.history) ==
        std::vector<std::string>{"BEGIN#1 ok", "INSERT#1 ok", "COMMIT#1 ok", "SET#1 ok", "INSERT#2 ok"});
  CHECK(stepOf(rig.history, "INSERT", 2)["summary"] == "INSERT 0 1");
  CHECK(stepOf(rig.history, "SET", 1)["server"] == "valkey");

  pgc.send(pg::terminate());
  pgc.close();
  REQUIRE(rig.pg.waitClosed(1));
  CHECK(opsOf(rig.history, "step").size() == 5);
  CHECK(opsOf(rig.history, "fault").empty());
  CHECK(rig.child.alive());
}

TEST_CASE("pg: a statement forwarded on another connection before a kill is recorded before the kill") {
  // c1 has an INSERT on one connection at the server (its reply not back) when it is killed before its
  // COMMIT on another: the INSERT may have taken effect, and the history says so before the kill.
  Rig rig({"before:COMMIT#1"});
  RawClient a(rig.ports.pg), b(rig.ports.pg);
  pgStartup(a);
  pgStartup(b);
  rig.pg.holdRepliesUntil(100); // the INSERT's reply never comes
  a.send(pg::query("INSERT INTO t VALUES (1)"));
  REQUIRE(rig.pg.waitCount(1));
  b.send(pg::query("COMMIT"));

  CHECK(b.readUntilClosed().closed);
  CHECK(a.readUntilClosed().closed);
  requireKilled(rig.child);
  REQUIRE(rig.waitOps("step", 2));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"COMMIT#1 killed-before", "INSERT#1 forwarded"});
  auto kills = opsOf(rig.history, "fault");
  REQUIRE(kills.size() == 1);
  CHECK(kills[0].value["fault"] == "before:COMMIT#1");
  for (const auto& s : opsOf(rig.history, "step")) CHECK(s.index < kills[0].index);
  CHECK(rig.ctl.state(1).inflight == 0);
}
