// The PostgreSQL tracker on hand-built messages: startup, framing, naming and reply matching rules.
#include "pg_messages.h"
#include "proxy/pg_codec.h"
#include "replay.h"

#include <catch2/catch.hpp>

using namespace idem::proxy;
using namespace idem::proxy::test;
using namespace idem::proxy::test::pg;

namespace {

using Strings = std::vector<std::string>;

/// A session after startup: the client's startup packet and the server's hello are already fed.
Events session(std::string_view client, std::string_view server) {
  const Events e = feedWhole(makePgTracker, startup() + std::string(client), serverHello() + std::string(server));
  REQUIRE(!e.client_invalid);
  REQUIRE(!e.server_invalid);
  return e;
}

std::vector<ServerMsg::Kind> serverKinds(const Events& e) {
  std::vector<ServerMsg::Kind> out;
  for (const auto& m : e.server)
    out.push_back(m.kind);
  return out;
}

/// Splits of every synthetic stream give the same events too.
void checkSplits(std::string_view client, std::string_view server) {
  checkSplitInvariance(makePgTracker, {Chunk{true, startup() + std::string(client)},
                                       Chunk{false, serverHello() + std::string(server)}});
}

} // namespace

TEST_CASE("pg startup: SSL and GSS requests are answered N locally, cancel and startup pass") {
  auto t = makePgTracker();
  ClientMsg m;
  const std::string ssl = startupPacket(80877103), gss = startupPacket(80877104);
  REQUIRE(t->onClient(gss.substr(0, 7), m) == Decode::NeedMoreData);
  REQUIRE(t->onClient(gss, m) == Decode::Message);
  CHECK(m.kind == ClientMsg::Kind::LocalReply);
  CHECK(m.local_reply == "N");
  CHECK(m.size == 8);
  REQUIRE(t->onClient(ssl + startup(), m) == Decode::Message);
  CHECK(m.kind == ClientMsg::Kind::LocalReply);
  REQUIRE(t->onClient(startup(), m) == Decode::Message);
  CHECK(m.kind == ClientMsg::Kind::Pass);
  CHECK(m.size == startup().size());
  REQUIRE(t->onClient(query("SELECT 1"), m) == Decode::Message); // typed from now on
  CHECK(m.kind == ClientMsg::Kind::RequestEnd);

  auto cancel = makePgTracker();
  REQUIRE(cancel->onClient(startupPacket(80877102, i32(7) + i32(9)), m) == Decode::Message);
  CHECK(m.kind == ClientMsg::Kind::Pass);
  CHECK(makePgTracker()->onClient(startupPacket(131072), m) == Decode::Invalid); // protocol 2
  CHECK(makePgTracker()->onClient(i32(4) + i32(196608), m) == Decode::Invalid);
  CHECK(makePgTracker()->onClient(i32(20000) + i32(196608), m) == Decode::Invalid);
}

TEST_CASE("pg framing: NeedMoreData consumes nothing, impossible lengths and types are Invalid") {
  auto t = makePgTracker();
  ClientMsg m;
  REQUIRE(t->onClient(startup(), m) == Decode::Message);
  const std::string q = query("SELECT 1");
  for (size_t n = 0; n < q.size(); ++n)
    REQUIRE(t->onClient(q.substr(0, n), m) == Decode::NeedMoreData);
  REQUIRE(t->onClient(q + q, m) == Decode::Message);
  CHECK(m.size == q.size());
  CHECK(t->onClient(std::string("Q") + i32(3), m) == Decode::Invalid);
  CHECK(t->onClient(std::string("Q") + i32((1u << 30) + 1), m) == Decode::Invalid);
  CHECK(t->onClient(msg('Z', ""), m) == Decode::Invalid); // not a frontend message
  ServerMsg s;
  CHECK(t->onServer(msg('Q', ""), s) == Decode::Invalid); // not a backend message
}

TEST_CASE("pg server: authentication, parameters, key data and the first ReadyForQuery pass") {
  const Events e = session("", msg('N', "SNOTICE\0Mhi\0\0"));
  for (const auto& m : e.server)
    CHECK(m.kind == ServerMsg::Kind::Pass);
  CHECK(e.server.size() == 5);
}

TEST_CASE("pg simple queries: named by their first keyword, replies matched in FIFO order") {
  const Events e = session(query("  /* a /* nested */ comment */ -- line\n (select 1)") +
                               query("BEGIN; INSERT INTO t VALUES (1)") + query("update t set x = 1") +
                               query("WITH ins AS (INSERT INTO t VALUES (2) RETURNING x) UPDATE u SET y = 1") +
                               query(""),
                           msg('T', "") + msg('D', "") + complete("SELECT 1") + ready() + complete("BEGIN") +
                               complete("INSERT 0 1") + ready('T') + errorResponse("boom") + ready('E') +
                               complete("UPDATE 0") + ready() + msg('I', "") + ready());
  CHECK(verbs(e) == Strings{"SELECT", "BEGIN", "UPDATE", "UPDATE", "EMPTY"});
  CHECK(summaries(e) == Strings{"SELECT 1", "BEGIN; INSERT 0 1", "error: boom", "UPDATE 0", "(empty query)"});
  CHECK(steps(e)[0].detail == "(select 1)"); // its leading comments left out (sqlDetail)
}

TEST_CASE("pg extended: prepared statements and portals name the Sync group by its first Execute") {
  const std::string client =
      parse("ins", "INSERT INTO t VALUES ($1)") + syncMessage() +                       // PARSE
      bind("", "ins") + describeMessage('P', "") + execute("") + syncMessage() +               // INSERT
      parse("", "DELETE FROM t") + parse("", "UPDATE t SET x = 2") + bind("p1", "") + execute("p1") + syncMessage() +
      describeMessage('S', "ins") + syncMessage() +                                            // DESCRIBE
      syncMessage() +                                                                   // SYNC
      closeMessage('S', "ins") + syncMessage() +                                               // CLOSE
      bind("", "ins") + execute("") + syncMessage();                                    // closed statement
  const std::string server = msg('1', "") + ready() + msg('2', "") + msg('n', "") + complete("INSERT 0 1") +
                             ready() + msg('1', "") + msg('1', "") + msg('2', "") + complete("UPDATE 3") + ready() +
                             msg('t', "") + msg('n', "") + ready() + ready() + msg('3', "") + ready() +
                             errorResponse("prepared statement \"ins\" does not exist") + ready();
  const Events e = session(client, server);
  CHECK(verbs(e) == Strings{"PARSE", "INSERT", "UPDATE", "DESCRIBE", "SYNC", "CLOSE", "EXECUTE"});
  CHECK(summaries(e) == Strings{"", "INSERT 0 1", "UPDATE 3", "", "", "",
                                "error: prepared statement \"ins\" does not exist"});
  CHECK(steps(e)[1].detail == "INSERT INTO t VALUES ($1)");
  checkSplits(client, server);
}

TEST_CASE("pg extended: a group that opens with BEGIN is named by the statement after it") {
  // pgjdbc with autocommit off and Npgsql send a transaction's BEGIN under the Sync of its first statement.
  const std::string client =
      parse("", "BEGIN") + bind("", "") + execute("") + parse("", "INSERT INTO t VALUES ($1)") + bind("", "") +
      describeMessage('P', "") + execute("") + syncMessage() +                                       // INSERT
      parse("", "BEGIN") + bind("", "") + execute("") + syncMessage() +                              // BEGIN
      parse("", "START TRANSACTION") + bind("", "") + execute("") + parse("", "UPDATE t SET x = 1") + bind("", "") +
      execute("") + parse("", "COMMIT") + bind("", "") + execute("") + syncMessage();               // UPDATE
  const std::string server = msg('1', "") + msg('2', "") + complete("BEGIN") + msg('1', "") + msg('2', "") +
                             msg('n', "") + complete("INSERT 0 1") + ready() + msg('1', "") + msg('2', "") +
                             complete("BEGIN") + ready() + msg('1', "") + msg('2', "") + complete("START TRANSACTION") +
                             msg('1', "") + msg('2', "") + complete("UPDATE 2") + msg('1', "") + msg('2', "") +
                             complete("COMMIT") + ready();
  const Events e = session(client, server);
  CHECK(verbs(e) == Strings{"INSERT", "BEGIN", "UPDATE"});
  CHECK(steps(e)[0].detail == "BEGIN; INSERT INTO t VALUES ($1)");
  CHECK(steps(e)[0].tables == Strings{"t"});
  CHECK(steps(e)[2].detail == "START TRANSACTION; UPDATE t SET x = 1; COMMIT");
  CHECK(summaries(e) == Strings{"BEGIN; INSERT 0 1", "BEGIN", "START TRANSACTION; UPDATE 2; COMMIT"});
  checkSplits(client, server);
}

TEST_CASE("pg Flush: a group with held messages ends at Flush, its reply at its last response") {
  const std::string client = parse("", "INSERT INTO t VALUES (1)") + bind("", "") + describeMessage('P', "") +
                             execute("") + flushMessage() + flushMessage() + syncMessage() +                     // INSERT, SYNC
                             parse("s", "SELECT 1") + describeMessage('S', "s") + flushMessage() + syncMessage(); // PARSE, SYNC
  const std::string server = msg('1', "") + msg('2', "") + msg('n', "") + complete("INSERT 0 1") + ready() +
                             msg('1', "") + msg('t', "") + msg('T', "") + ready();
  const Events e = session(client, server);
  CHECK(verbs(e) == Strings{"INSERT", "SYNC", "PARSE", "SYNC"});
  CHECK(summaries(e) == Strings{"INSERT 0 1", "", "", ""});
  int bare_flush = 0;
  for (const auto& m : e.client)
    bare_flush += m.kind == ClientMsg::Kind::Pass && m.size == 5;
  CHECK(bare_flush == 1); // the second Flush holds nothing: it passes
  // The INSERT's reply ends at its CommandComplete, the PARSE's at the RowDescription.
  const auto kinds = serverKinds(e);
  CHECK(kinds[4 + 3] == ServerMsg::Kind::ReplyEnd);
  CHECK(kinds[4 + 7] == ServerMsg::Kind::ReplyEnd);
  checkSplits(client, server);
}

TEST_CASE("pg Flush pipeline with an error: the steps the server skips end unanswered") {
  const std::string client = parse("", "SELECT 1/0") + bind("", "") + execute("") + flushMessage() + // SELECT (fails)
                             parse("", "INSERT INTO t VALUES (1)") + bind("", "") + execute("") + flushMessage() +
                             query("SELECT 2") +                                               // skipped too
                             parse("", "UPDATE t SET x = 1") + bind("", "") + execute("") + syncMessage() +
                             query("COMMIT");
  const std::string server =
      msg('1', "") + errorResponse("division by zero") + ready('E') + complete("ROLLBACK") + ready();
  const Events e = session(client, server);
  CHECK(verbs(e) == Strings{"SELECT", "INSERT", "SELECT", "UPDATE", "COMMIT"});
  CHECK(summaries(e) == Strings{"error: division by zero",
                                "error: skipped: an earlier message of the pipeline failed", "ROLLBACK"});
  std::vector<size_t> skipped;
  for (const auto& m : e.server)
    if (m.kind == ServerMsg::Kind::ReplyEnd)
      skipped.push_back(m.skipped);
  CHECK(skipped == std::vector<size_t>{0, 2, 0});
  checkSplits(client, server);
}

TEST_CASE("pg pipelining: several Syncs and Queries before any reply are answered in order") {
  std::string client, server;
  for (int i = 0; i < 5; ++i) {
    client += parse("", "UPDATE t SET x = " + std::to_string(i)) + bind("", "") + execute("") + syncMessage() +
              query("SELECT " + std::to_string(i));
    server += msg('1', "") + msg('2', "") + complete("UPDATE " + std::to_string(i)) + ready() +
              complete("SELECT 1") + ready();
  }
  const Events e = session(client, server);
  CHECK(verbs(e).size() == 10);
  CHECK(summaries(e)[8] == "UPDATE 4");
  checkSplits(client, server);
}

TEST_CASE("pg COPY: client data passes, the step ends at ReadyForQuery, FunctionCall, Terminate") {
  const std::string client = query("COPY t FROM STDIN") + msg('d', "1\n") + msg('d', "2\n") + msg('c', "") +
                             query("COPY t TO STDOUT") + msg('F', i32(42) + std::string(6, '\0')) + msg('X', "");
  const std::string server = msg('G', std::string(3, '\0')) + complete("COPY 2") + ready() +
                             msg('H', std::string(3, '\0')) + msg('d', "1\n") + msg('c', "") + complete("COPY 1") +
                             ready() + msg('V', i32(0)) + ready() + msg('A', i32(1) + cstr("ch") + cstr(""));
  const Events e = session(client, server);
  CHECK(verbs(e) == Strings{"COPY", "COPY", "FUNCTION"});
  CHECK(summaries(e) == Strings{"COPY 2", "COPY 1", ""});
  size_t passes = 0;
  for (const auto& m : e.client)
    passes += m.kind == ClientMsg::Kind::Pass;
  CHECK(passes == 5); // startup, 2 × CopyData, CopyDone, Terminate
  CHECK(e.server.back().kind == ServerMsg::Kind::Pass); // a notification with no step outstanding
  // CopyInResponse passes: the client waits for it before it sends the data; CopyOut is reply.
  const auto kinds = serverKinds(e);
  using K = ServerMsg::Kind;
  CHECK(std::vector<K>(kinds.begin() + 4, kinds.end()) ==
        std::vector<K>{K::Pass, K::Part, K::ReplyEnd, K::Part, K::Part, K::Part, K::Part, K::ReplyEnd, K::Part,
                       K::ReplyEnd, K::Pass});
  checkSplits(client, server);
}

TEST_CASE("pg COPY: a CopyData too large to hold passes through in pieces as it arrives") {
  const std::string rows(3 << 20, 'r');
  const std::string client = query("COPY t FROM STDIN") + msg('d', rows) + msg('d', "2\n") + msg('c', "") +
                             query("SELECT 1");
  const std::string server = msg('G', std::string(3, '\0')) + complete("COPY 2") + ready() + complete("SELECT 1") +
                             ready();
  const Events whole = feedWhole(makePgTracker, startup() + client, serverHello() + server);
  for (size_t piece : {size_t(65536), size_t(100000), size_t(1 << 20)}) {
    INFO("pieces of " << piece << " bytes");
    const Events e = feedPieces(makePgTracker, startup() + client, serverHello() + server, piece);
    REQUIRE(!e.client_invalid);
    CHECK(e.client_left == 0);
    CHECK(verbs(e) == verbs(whole));
    CHECK(summaries(e) == summaries(whole));
    const Sizes sizes = sizesOf(e.client);
    CHECK(sizes.total == startup().size() + client.size());
    CHECK(sizes.largest <= kPgStreamAbove + piece); // nothing near the whole CopyData held at once
    for (const auto& m : e.client)
      if (m.kind != ClientMsg::Kind::Pass) CHECK(m.size < 1024);
  }
}

TEST_CASE("pg: a Query or Bind too large to hold is framed in pieces, its last byte held for the step") {
  const std::string blob(3 << 20, 'x');
  const std::string bigInsert = "INSERT INTO t VALUES ('" + blob + "')";
  // A Bind whose one text parameter is the blob: portal "", statement "s", no formats, 1 parameter.
  const std::string bindBody = cstr("") + cstr("s") + std::string(2, '\0') + std::string("\0\1", 2) +
                               i32(static_cast<uint32_t>(blob.size())) + blob + std::string(2, '\0');
  const std::string client = query(bigInsert) + parse("s", "INSERT INTO t VALUES ($1)") + msg('B', bindBody) +
                             execute("") + syncMessage();
  const std::string server = complete("INSERT 0 1") + ready() + msg('1', "") + msg('2', "") +
                             complete("INSERT 0 1") + ready();
  const Events whole = feedWhole(makePgTracker, startup() + client, serverHello() + server);
  REQUIRE(verbs(whole) == Strings{"INSERT", "INSERT"});
  for (size_t piece : {size_t(65536), size_t(100000), size_t(1 << 20)}) {
    INFO("pieces of " << piece << " bytes");
    const Events e = feedPieces(makePgTracker, startup() + client, serverHello() + server, piece);
    REQUIRE(!e.client_invalid);
    CHECK(e.client_left == 0);
    CHECK(verbs(e) == verbs(whole));
    CHECK(summaries(e) == summaries(whole));
    CHECK(steps(e).at(0).detail.rfind("INSERT INTO t VALUES ('xxx", 0) == 0);
    const Sizes sizes = sizesOf(e.client);
    CHECK(sizes.total == startup().size() + client.size());
    CHECK(sizes.largestHeld <= kPgStreamAbove + piece);
    CHECK(sizes.streamed > 2 * blob.size() - 2 * (kPgStreamAbove + piece)); // both went through, not held
  }
}

TEST_CASE("pg: a DataRow too large to frame whole is taken in pieces, part of its step's reply") {
  const std::string value(3 << 20, 'r');
  const std::string row = msg('D', std::string("\0\1", 2) + i32(static_cast<uint32_t>(value.size())) + value);
  const std::string client = query("SELECT repeat('r', 3145728)") + query("SELECT 1");
  const std::string server = msg('T', std::string(2, '\0')) + row + complete("SELECT 1") + ready() + complete("SELECT 1") +
                             ready();
  const Events whole = feedWhole(makePgTracker, startup() + client, serverHello() + server);
  for (size_t piece : {size_t(65536), size_t(100000), size_t(1 << 20)}) {
    INFO("pieces of " << piece << " bytes");
    const Events e = feedPieces(makePgTracker, startup() + client, serverHello() + server, piece);
    REQUIRE(!e.server_invalid);
    CHECK(e.server_left == 0);
    CHECK(summaries(e) == summaries(whole));
    const Sizes sizes = sizesOf(e.server);
    CHECK(sizes.total == serverHello().size() + server.size());
    CHECK(sizes.largest <= kPgStreamAbove + piece);
    CHECK(std::count_if(e.server.begin(), e.server.end(),
                        [](const ServerMsg& m) { return m.kind == ServerMsg::Kind::ReplyEnd; }) == 2);
  }
}
