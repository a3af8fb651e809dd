// The RESP tracker on sessions recorded from real clients (tests/captures/README.md): concrete step
// names, replies and deliveries, and the same events however the bytes are split.
#include "replay.h"

#include <catch2/catch.hpp>

using namespace idem::proxy;
using namespace idem::proxy::test;

namespace {

using Strings = std::vector<std::string>;

/// The id an XADD reply carries: its summary is the quoted bulk string.
std::string addedId(const ReplyInfo& r) { return r.summary.substr(1, r.summary.size() - 2); }

/// The stream part every consumer session shares: XADD ids delivered by XREADGROUP, claimed by
/// XAUTOCLAIM, acked by XACK; then an empty blocking read. `at` is the index of the first XADD step.
void checkStreamFlow(const Events& e, size_t at) {
  const auto st = steps(e);
  const auto re = replies(e);
  const Strings added = {addedId(re[at]), addedId(re[at + 1])};
  CHECK(st[at + 2].verb == "XREADGROUP");
  CHECK(st[at + 2].blocking);
  CHECK(deliveredIds(re[at + 2]) == added);
  REQUIRE(re[at + 2].delivered.size() == 2);
  CHECK(re[at + 2].delivered[0].fields == std::vector<std::pair<std::string, std::string>>{{"order", "1"},
                                                                                            {"amount", "10"}});
  CHECK(st[at + 3].verb == "XAUTOCLAIM");
  CHECK(deliveredIds(re[at + 3]) == added);
  CHECK(st[at + 4].verb == "XACK");
  CHECK(st[at + 4].acked == added);
  CHECK(re[at + 4].summary == "(integer) 2");
  CHECK(st[at + 5].blocking);
  CHECK(re[at + 5].empty_read);
  CHECK(re[at + 5].summary == "0 entries");
}

} // namespace

TEST_CASE("hiredis capture: lock, group, deleted entry, XAUTOCLAIM, error, pipeline") {
  const auto chunks = loadCapture("hiredis/session.cap");
  const Events e = wholeOf(makeRespTracker, chunks);
  requireBalanced(e);
  CHECK(verbs(e) == Strings{"SET", "SET", "XGROUP", "XADD", "XADD", "XADD", "XREADGROUP", "XDEL",
                            "XREADGROUP", "XAUTOCLAIM", "XACK", "XREADGROUP", "XGROUP", "XADD", "SET", "GET"});
  const auto re = replies(e);
  const auto st = steps(e);
  const Strings added = {addedId(re[3]), addedId(re[4]), addedId(re[5])};
  CHECK(re[0].summary == "+OK");
  CHECK(re[1].summary == "(nil)");
  CHECK(st[0].detail == "SET lock:hiredis owner NX PX 30000");
  CHECK(deliveredIds(re[6]) == added);
  CHECK(re[6].summary == "3 entries");
  // The pending history shows the deleted entry with nil fields.
  CHECK(deliveredIds(re[8]) == added);
  CHECK(re[8].delivered[1].fields.empty());
  CHECK(re[8].delivered[2].fields.size() == 2);
  // Redis 7 XAUTOCLAIM: [next, [claimed…], [deleted…]]; the deleted id is not delivered.
  CHECK(deliveredIds(re[9]) == Strings{added[0], added[2]});
  CHECK(st[10].acked == Strings{added[0], added[2]});
  CHECK(re[11].empty_read);
  CHECK(st[11].blocking);
  CHECK(!st[8].blocking);
  CHECK(re[12].error);
  CHECK(re[12].summary == "-BUSYGROUP Consumer Group name already exists");
  CHECK(re[14].summary == "+OK");
  CHECK(re[15].summary == "\"1\"");
  checkSplitInvariance(makeRespTracker, chunks);
}

TEST_CASE("redis-py capture: consumer session and pipelines with and without MULTI") {
  const auto chunks = loadCapture("redis-py/session.cap");
  const Events e = wholeOf(makeRespTracker, chunks);
  requireBalanced(e);
  CHECK(verbs(e) == Strings{"SET", "XGROUP", "XADD", "XADD", "XREADGROUP", "XAUTOCLAIM", "XACK", "XREADGROUP"});
  checkStreamFlow(e, 2);
  checkSplitInvariance(makeRespTracker, chunks);

  const auto piped = loadCapture("redis-py/session-2.cap"); // the pipelines ran on a pooled connection
  const Events p = wholeOf(makeRespTracker, piped);
  requireBalanced(p);
  CHECK(verbs(p) == Strings{"XADD", "SET", "GET", "MULTI", "INCRBY", "SET", "EXEC"});
  const Strings s = summaries(p);
  CHECK(Strings(s.begin() + 1, s.end()) ==
        Strings{"+OK", "\"1\"", "+OK", "+QUEUED", "+QUEUED", "(array) 2 elements"});
  checkSplitInvariance(makeRespTracker, piped);
}

TEST_CASE("ioredis capture: RESP3 (HELLO 3), errors, pipeline and MULTI") {
  const auto chunks = loadCapture("ioredis/session.cap");
  const Events e = wholeOf(makeRespTracker, chunks);
  requireBalanced(e);
  CHECK(verbs(e) == Strings{"HELLO", "CLIENT", "CLIENT", "INFO", "SET", "XGROUP", "XADD", "XADD", "XREADGROUP",
                            "XAUTOCLAIM", "XACK", "XREADGROUP", "XADD", "SET", "GET", "MULTI", "INCRBY", "SET",
                            "EXEC"});
  const Strings s = summaries(e);
  CHECK(s[0] == "(map) 7 pairs");
  CHECK(s[1] == "error: -ERR unknown subcommand 'SETINFO'. Try CLIENT HELP.");
  checkStreamFlow(e, 6); // RESP3: XREADGROUP replies with a map, the empty read with _
  checkSplitInvariance(makeRespTracker, chunks);
}

TEST_CASE("raw RESP3 capture: every RESP3 type, an attribute, a push, an inline command") {
  const auto chunks = loadCapture("resp3/session.cap");
  const Events e = wholeOf(makeRespTracker, chunks);
  requireBalanced(e);
  CHECK(verbs(e) == Strings{"HELLO", "SET", "XGROUP", "XADD", "XADD", "XREADGROUP", "XAUTOCLAIM", "XACK",
                            "XREADGROUP", "DEBUG", "DEBUG", "DEBUG", "DEBUG", "DEBUG", "DEBUG", "DEBUG", "DEBUG",
                            "CLIENT", "GET", "SET", "PING", "XADD", "SET", "GET"});
  checkStreamFlow(e, 3);
  const Strings s = summaries(e);
  CHECK(Strings(s.begin() + 9, s.begin() + 17) ==
        Strings{"\"Some real reply following the attribute\"", "(map) 3 pairs", "(set) 3 elements",
                "(double) 3.141", "(boolean) true", "(big number) 1234567999999999999999999999999999999",
                "\"txt:This is a verbatim\\nstring\"", "(nil)"});
  CHECK(s[20] == "+PONG");
  size_t parts = 0, passes = 0;
  for (const auto& m : e.server) {
    parts += m.kind == ServerMsg::Kind::Part;     // the attribute
    passes += m.kind == ServerMsg::Kind::Pass;    // the invalidation push
  }
  CHECK(parts == 1);
  CHECK(passes == 1);
  checkSplitInvariance(makeRespTracker, chunks);
}

TEST_CASE("RESP captures concatenated: one pipelined stream gives the events of each in turn") {
  std::string client, server;
  std::vector<std::string> expect_c, expect_s;
  for (const char* name : {"hiredis/session.cap", "redis-py/session.cap", "resp3/session.cap",
                           "ioredis/session.cap", "redis-py/session-2.cap"}) {
    const auto chunks = loadCapture(name);
    const Events e = wholeOf(makeRespTracker, chunks);
    for (const auto& m : e.client)
      expect_c.push_back(describe(m));
    for (const auto& m : e.server)
      expect_s.push_back(describe(m));
    client += joinDirection(chunks, true);
    server += joinDirection(chunks, false);
  }
  for (size_t piece : {size_t(0), size_t(1), size_t(13)}) {
    const Events all = piece ? feedPieces(makeRespTracker, client, server, piece)
                             : feedWhole(makeRespTracker, client, server);
    std::vector<std::string> got_c, got_s;
    for (const auto& m : all.client)
      got_c.push_back(describe(m));
    for (const auto& m : all.server)
      got_s.push_back(describe(m));
    CHECK(got_c == expect_c);
    CHECK(got_s == expect_s);
  }
}
