// The RESP tracker on Lua scripts (their SHA-1, the stream commands they call, their id-like arguments) and
// on transactions: what MULTI queues reads and acknowledges at EXEC, in its reply's order.
#include "proxy/resp_script.h"
#include "resp_messages.h"

#include <catch2/catch.hpp>

using namespace idem::proxy;
using namespace idem::proxy::test;

namespace {

using Strings = std::vector<std::string>;

} // namespace

TEST_CASE("resp scripts: a script's SHA-1, the stream commands its body calls, its arguments that look like ids") {
  // SCRIPT LOAD "return 1" answers e0e1f9fabfc9d4800c877a703b823ac0578ff8db (the Valkey docs' example).
  ClientMsg m = oneCommand(cmd({"SCRIPT", "LOAD", "return 1"}));
  CHECK(m.step.script == "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
  CHECK(m.step.scriptCalls.empty());
  CHECK(!m.step.unseen); // loading runs nothing
  const std::string body = "local new = redis.call('SET', KEYS[2], '1', 'NX')\n"
                           "redis.call( \"xack\" , KEYS[1], ARGV[1], ARGV[2])\n"
                           "if ARGV[3] == '1' then redis.pcall('XDEL', KEYS[1], ARGV[2]) end\n"
                           "server.call('XACK', KEYS[1], ARGV[1], ARGV[2]) return new";
  m = oneCommand(cmd({"script", "load", body}));
  CHECK(m.step.script == scriptSha(body));
  CHECK(m.step.scriptCalls == Strings{"XACK", "XDEL"});
  m = oneCommand(cmd({"EVAL", body, "2", "wallet", "seen:e1", "g", "1733000000000-0", "1", "0-0x"}));
  CHECK(m.step.unseen);
  CHECK(m.step.script == scriptSha(body));
  CHECK(m.step.scriptCalls == Strings{"XACK", "XDEL"});
  CHECK(m.step.scriptIds == Strings{"1733000000000-0"});
  // EVALSHA names its script (any case) and carries no body.
  m = oneCommand(cmd({"evalsha", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", "1", "1-0", "g", "2-5"}));
  CHECK(m.step.unseen);
  CHECK(m.step.script == "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
  CHECK(m.step.scriptCalls.empty());
  CHECK(m.step.scriptIds == Strings{"1-0", "2-5"});
  // A function is called by its name, not a script's: no SHA-1.
  m = oneCommand(cmd({"FCALL", "ack", "1", "wallet", "1-0"}));
  CHECK(m.step.unseen);
  CHECK(m.step.script.empty());
  // What is not a quoted stream command is not one: a variable, a key command, a broken quote.
  CHECK(scriptStreamCalls("local v = 'XACK' redis.call(v, KEYS[1])").empty());
  CHECK(scriptStreamCalls("redis.call('GET', KEYS[1]) redis.call('XACK") == Strings{});
  CHECK(scriptStreamCalls("redis.callx('XACK')").empty());
  CHECK(scriptSha("") == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  CHECK(scriptSha(std::string(1000, 'a')) == "291e9a6c66994949b57ba5e650361e98fc36b1ba");
  CHECK(entryIdArgs({"1-0", "-1", "1-", "a-1", "12345678901234567890-1", "123456789012345678901-1"}, 0) ==
        Strings{"1-0", "12345678901234567890-1"});
}

TEST_CASE("resp transactions: what is queued inside MULTI reads and acknowledges at EXEC, in its reply's order") {
  // redis-py's default pipeline (transaction=True): MULTI, XACK, XREADGROUP, EXEC in one write.
  const std::string client = cmd({"MULTI"}) + cmd({"XACK", "s", "g", "1-0"}) +
                             cmd({"XREADGROUP", "GROUP", "g", "c", "COUNT", "10", "BLOCK", "100", "STREAMS", "s", ">"}) +
                             cmd({"EXEC"}) + cmd({"MULTI"}) + cmd({"XACK", "s", "g", "2-0"}) + cmd({"DISCARD"}) +
                             cmd({"XACK", "s", "g", "3-0"});
  const std::string entry = "*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n";
  const std::string server = "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:1\r\n*1\r\n*2\r\n$1\r\ns\r\n*1\r\n" + entry +
                             "+OK\r\n+QUEUED\r\n+OK\r\n:1\r\n";
  const Events e = run(client, server);
  const auto steps = idem::proxy::test::steps(e);
  REQUIRE(steps.size() == 8);
  CHECK(steps[1].acked.empty()); // queued: it acknowledges nothing until EXEC runs it
  CHECK(!steps[2].read);
  CHECK(!steps[2].blocking);     // a read inside MULTI never blocks
  CHECK(steps[3].verb == "EXEC");
  CHECK(steps[3].acked == Strings{"1-0"});
  CHECK(steps[3].read);
  CHECK(steps[5].acked.empty());
  CHECK(steps[6].acked.empty()); // DISCARD ran nothing
  CHECK(steps[7].acked == Strings{"3-0"});
  const auto rs = replies(e);
  REQUIRE(rs.size() == 8);
  CHECK(rs[2].delivered.empty());
  CHECK(deliveredIds(rs[3]) == Strings{"2-0"});
  CHECK(rs[3].summary == "1 entry");
  // EXEC that ran nothing: a WATCHed key changed (null), or a queued command was refused (EXECABORT).
  const std::string exec = cmd({"MULTI"}) + cmd({"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"}) + cmd({"EXEC"});
  CHECK(replies(run(exec, "+OK\r\n+QUEUED\r\n*-1\r\n"))[2].delivered.empty());
  CHECK(replies(run(exec, "+OK\r\n-ERR wrong\r\n-EXECABORT Transaction discarded\r\n"))[2].error);
  // An empty read inside the transaction is an empty read of the EXEC step.
  CHECK(replies(run(exec, "+OK\r\n+QUEUED\r\n*1\r\n*-1\r\n"))[2].empty_read);
}

TEST_CASE("resp transactions: an entry read again after the transaction acknowledged it is pending again") {
  // redis-py's pipeline after a forget set the group back: XACK 1-0, then XREADGROUP hands 1-0 over again.
  const std::string entry = "*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n";
  const std::string read = "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n" + entry;
  const Strings xack = {"XACK", "s", "g", "1-0"}, xread = {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"};
  const Events ackFirst = run(cmd({"MULTI"}) + cmd(xack) + cmd(xread) + cmd({"EXEC"}),
                              "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:1\r\n" + read);
  REQUIRE(replies(ackFirst).size() == 4);
  CHECK(replies(ackFirst)[3].reheld == Strings{"1-0"});
  CHECK(idem::proxy::test::steps(ackFirst)[3].acked == Strings{"1-0"});
  // Read first, then acknowledged: settled at the end of the transaction.
  const Events readFirst = run(cmd({"MULTI"}) + cmd(xread) + cmd(xack) + cmd({"EXEC"}),
                               "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n" + read + ":1\r\n");
  CHECK(replies(readFirst)[3].reheld.empty());
  // An XACK the transaction refused acknowledged nothing.
  const Events refused = run(cmd({"MULTI"}) + cmd(xack) + cmd(xread) + cmd({"EXEC"}),
                             "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n-WRONGTYPE no\r\n" + read);
  CHECK(replies(refused)[3].reheld.empty());
}

TEST_CASE("resp transactions: scripts queued inside MULTI are named at EXEC, with every call's ids") {
  // ioredis' multi() with a defineCommand script: EVALSHA per entry, queued, run at EXEC.
  const std::string sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
  const std::string client = cmd({"MULTI"}) + cmd({"EVALSHA", sha, "1", "s", "g", "1-0"}) +
                             cmd({"EVALSHA", sha, "1", "s", "g", "2-0"}) + cmd({"EXEC"});
  const Events e = run(client, "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:1\r\n:1\r\n");
  const auto steps = idem::proxy::test::steps(e);
  REQUIRE(steps.size() == 4);
  CHECK(steps[1].script.empty()); // queued: it runs at EXEC
  CHECK(steps[3].unseen);
  CHECK(steps[3].script == sha);
  CHECK(steps[3].scriptIds == Strings{"1-0", "2-0"});
  // A queued SCRIPT LOAD shows the body at EXEC.
  const Events load = run(cmd({"MULTI"}) + cmd({"SCRIPT", "LOAD", "return redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])"}) +
                              cmd({"EXEC"}),
                          "+OK\r\n+QUEUED\r\n*1\r\n$40\r\n" + std::string(40, 'a') + "\r\n");
  const auto loaded = idem::proxy::test::steps(load);
  REQUIRE(loaded.size() == 3);
  CHECK(loaded[2].scriptCalls == Strings{"XACK"});
  CHECK(loaded[2].script == scriptSha("return redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])"));
}
