// The PostgreSQL tracker on sessions recorded from real clients (tests/captures/README.md): concrete
// step names and replies, and the same events however the bytes are split.
#include "replay.h"

#include <catch2/catch.hpp>

using namespace idem::proxy;
using namespace idem::proxy::test;

namespace {

using Strings = std::vector<std::string>;

} // namespace

TEST_CASE("libpq capture: simple, extended, prepared, error and two pipelines") {
  const auto chunks = loadCapture("libpq/session.cap");
  const Events e = wholeOf(makePgTracker, chunks);
  requireBalanced(e);
  CHECK(e.client.front().kind == ClientMsg::Kind::LocalReply); // SSLRequest
  CHECK(e.client.front().local_reply == "N");
  // The last pipeline sends its BEGIN with its statements: named by the first after it.
  CHECK(verbs(e) == Strings{"BEGIN", "INSERT", "PARSE", "UPDATE", "COMMIT", "SELECT", "INSERT", "SELECT",
                            "UPDATE", "SYNC", "INSERT"});
  CHECK(summaries(e) == Strings{"BEGIN", "INSERT 0 1", "", "UPDATE 1", "COMMIT", "error: division by zero",
                                "INSERT 0 1", "error: division by zero", "",
                                "BEGIN; INSERT 0 1; UPDATE 1; COMMIT"});
  // The UPDATE of the failed Flush pipeline never ran: it ends unanswered before the Sync's reply.
  size_t skipped = 0;
  for (const auto& m : e.server)
    skipped += m.skipped;
  CHECK(skipped == 1);
  // The step names come from the statements, not from the protocol messages.
  const auto st = steps(e);
  CHECK(st[3].detail == "UPDATE accounts SET balance = balance + $1 WHERE id = $2");
  CHECK(st[10].detail == "BEGIN; INSERT INTO processed(msg_id) VALUES ($1) ON CONFLICT DO NOTHING; "
                         "UPDATE accounts SET balance = balance + $1 WHERE id = $2; COMMIT");
  checkSplitInvariance(makePgTracker, chunks);
}

TEST_CASE("psycopg capture: transaction, prepared statement, pipeline, auto-prepare") {
  const auto chunks = loadCapture("psycopg/session.cap");
  const Events e = wholeOf(makePgTracker, chunks);
  requireBalanced(e);
  CHECK(verbs(e) == Strings{"BEGIN",  "INSERT", "PARSE",  "UPDATE", "COMMIT", // transaction, prepare=True
                            "BEGIN",  "INSERT", "SYNC",                       // pipeline
                            "SELECT", "SELECT", "SELECT", "SELECT", "SELECT", "PARSE", "SELECT"});
  CHECK(summaries(e) == Strings{"BEGIN", "INSERT 0 1", "", "UPDATE 1", "COMMIT", "BEGIN",
                                "INSERT 0 1; UPDATE 1; COMMIT", "", "SELECT 0", "SELECT 1", "SELECT 1",
                                "SELECT 0", "SELECT 0", "", "SELECT 0"});
  checkSplitInvariance(makePgTracker, chunks);
}

TEST_CASE("node-postgres capture: parameterized and named statements") {
  const auto chunks = loadCapture("node-pg/session.cap");
  const Events e = wholeOf(makePgTracker, chunks);
  requireBalanced(e);
  CHECK(verbs(e) == Strings{"BEGIN", "INSERT", "UPDATE", "UPDATE", "COMMIT"});
  CHECK(summaries(e) == Strings{"BEGIN", "INSERT 0 1", "UPDATE 1", "UPDATE 1", "COMMIT"});
  checkSplitInvariance(makePgTracker, chunks);
}

TEST_CASE("asyncpg capture: binary protocol, prepares ended by Flush, an error in a transaction, executemany") {
  const auto chunks = loadCapture("asyncpg/session.cap");
  const Events e = wholeOf(makePgTracker, chunks);
  requireBalanced(e);
  // asyncpg prepares each statement on its own round trip (Parse, Describe, Flush: no Sync), then runs it
  // (Bind, Execute, Sync); BEGIN, COMMIT and ROLLBACK go as simple queries.
  CHECK(verbs(e) == Strings{"BEGIN", "PARSE", "INSERT", "PARSE", "UPDATE", "UPDATE", "COMMIT", // transaction
                            "BEGIN", "PARSE", "SELECT", "ROLLBACK",                            // the error
                            "INSERT"});                                                        // executemany
  CHECK(summaries(e) == Strings{"BEGIN", "", "INSERT 0 1", "", "UPDATE 1", "UPDATE 1", "COMMIT", "BEGIN", "",
                                "error: division by zero", "ROLLBACK", "INSERT 0 1; INSERT 0 1; INSERT 0 0"});
  const auto st = steps(e);
  CHECK(st[1].flushed);
  CHECK_FALSE(st[2].flushed);
  CHECK(st[5].detail == "UPDATE accounts SET balance = balance + $1 WHERE id = $2"); // from the named statement
  checkSplitInvariance(makePgTracker, chunks);
}

TEST_CASE("pgx capture: statement cache, binary parameters, an error, a Batch under one Sync") {
  const auto chunks = loadCapture("pgx/session.cap");
  const Events e = wholeOf(makePgTracker, chunks);
  requireBalanced(e);
  // pgx prepares each statement on its own round trip (Parse, Describe, Sync), then runs it by name
  // (Bind, Describe portal, Execute, Sync); a Batch binds and executes both statements under one Sync.
  CHECK(verbs(e) == Strings{"BEGIN", "PARSE", "INSERT", "PARSE", "UPDATE", "UPDATE", "COMMIT", "PARSE", "SELECT",
                            "INSERT"});
  CHECK(summaries(e) == Strings{"BEGIN", "", "INSERT 0 1", "", "UPDATE 1", "UPDATE 1", "COMMIT", "",
                                "error: division by zero", "INSERT 0 1; UPDATE 1"});
  const auto st = steps(e);
  CHECK(st[9].detail == "INSERT INTO processed(msg_id) VALUES ($1) ON CONFLICT DO NOTHING; "
                        "UPDATE accounts SET balance = balance + $1 WHERE id = $2");
  checkSplitInvariance(makePgTracker, chunks);
}

TEST_CASE("PostgreSQL captures: steps are requested and answered alike in the recorded interleaving") {
  for (const char* name : {"libpq/session.cap", "psycopg/session.cap", "node-pg/session.cap", "asyncpg/session.cap",
                           "pgx/session.cap"}) {
    INFO(name);
    const auto chunks = loadCapture(name);
    const Events recorded = feedSession(makePgTracker, chunks);
    const Events whole = wholeOf(makePgTracker, chunks);
    CHECK(recorded.lines(true) == whole.lines(true));
    CHECK(recorded.lines(false) == whole.lines(false));
  }
}
