// What shows with replicas and pooled sessions, on written histories of the orders scenario: a key's lock
// that outlives its request (a session-level advisory lock an error path never released,
// checkers/patterns/http_session_lock_left.cc), a refusal while the harness held the lock's holder, and a
// key kept in one process's memory (http_key_in_memory.cc).
#include "history_builder.h"
#include "check_util.h"

#include "checkers/patterns/patterns.h"

using namespace idem;
using namespace idem::testing;
using Catch::Matchers::Contains;

namespace {

const char* kLock = "SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok";
const char* kUnlock = "SELECT pg_advisory_unlock(hashtextextended($1, 0))";

/// The order's work on connection 1 after the lock: BEGIN, the key looked up, the order and the key's row
/// inserted; then COMMIT, or an error answered instead of it and the ROLLBACK after.
void orderWork(HttpHistoryBuilder& o, bool commitFails) {
  o.sql("BEGIN");
  o.sql("SELECT", "SELECT status, body FROM idempotency_keys WHERE key = $1", 1, {"idempotency_keys"}, "SELECT 0");
  o.sql("INSERT", "INSERT INTO orders(ref) VALUES ($1) RETURNING id", 1, {"orders"}, "INSERT 0 1");
  o.sql("INSERT", "INSERT INTO idempotency_keys(key, status, body) VALUES ($1,$2,$3)", 1, {"idempotency_keys"}, "INSERT 0 1");
  if (!commitFails) {
    o.sql("COMMIT", "COMMIT", 1, {}, "COMMIT");
    return;
  }
  o.sqlError("COMMIT");
  o.sql("ROLLBACK", "ROLLBACK", 1, {}, "ROLLBACK");
}

/// r1's lock taken with `lock` and its COMMIT failed (answered 500), then r2, the retry on the same
/// connection, completes (201); the next request goes to s2.
void leakUpToTheLook(HttpHistoryBuilder& o, const char* lock, bool unlockOnError) {
  const int r1 = o.request(1, 1);
  o.sql("SELECT", lock, 1, {}, "SELECT 1");
  orderWork(o, true);
  if (unlockOnError) o.sql("SELECT", kUnlock, 1, {}, "SELECT 1");
  o.answer(r1, 500, "{\"error\":\"serialization failure\"}");
  const int r2 = o.request(1, 1, "settle");
  o.sql("SELECT", lock, 1, {}, "SELECT 1");
  orderWork(o, false);
  o.sql("SELECT", kUnlock, 1, {}, "SELECT 1");
  o.answer(r2, 201, "{\"order\":1}", "/orders/1");
  o.to("s2");
}

/// r1 takes the lock on connection 1 and its COMMIT fails (answered 500; `unlockOnError`: its error path
/// releases the lock); the retry r2 runs on that connection again and completes (201); the client's last
/// look r3 goes to the other replica, s2, whose lock call is refused (409; the builder writes every step as
/// s1's, on its connection 2 here).
std::vector<CheckResult> leakRun(bool unlockOnError) {
  HttpHistoryBuilder o(1);
  leakUpToTheLook(o, kLock, unlockOnError);
  const int r3 = o.request(1, 1, "settle");
  o.sql("SELECT", kLock, 2, {}, "SELECT 1");
  o.answer(r3, 409, "{\"error\":\"request in progress\"}");
  return judge(o, {{1, 1}}, 999);
}

} // namespace

TEST_CASE("http-session-lock-left: a session lock an error path kept, a completed key refused on another "
          "connection", "[patterns][http]") {
  const auto rs = leakRun(false);
  const Violation* v = violationOf(rs, "replay-mismatch");
  REQUIRE(v);
  REQUIRE(v->pattern);
  CHECK(v->pattern->id == "http-session-lock-left");
  // Which replica answered, and which the answer it should have replayed came from.
  CHECK_THAT(v->message, Contains("r3 (to s2, r2 to s1) retried the completed key 1 and got 409"));
  CHECK(v->pattern->explanation ==
        "s1's connection 1 took a session-level lock (SELECT#1: SELECT pg_try_advisory_lock(hashtextextended($1, 0)) "
        "AS ok), then got an error (COMMIT#1) while it held it and went on without releasing it: the lock outlived "
        "its request, and every other session is refused the key, or waits for it (r3 got 409)");
  CHECK_THAT(v->pattern->fix, Contains("pg_advisory_xact_lock"));
}

TEST_CASE("a session lock its error path released, or a lock taken per transaction, names no lock left held",
          "[patterns][http]") {
  // The same refusal of r3, but r1's error path released its lock: the count is off (by a lock another
  // request holds, or a try-lock that took nothing), not left by an error.
  const auto released = leakRun(true);
  const Violation* v = violationOf(released, "replay-mismatch");
  REQUIRE(v);
  CHECK((!v->pattern || v->pattern->id != "http-session-lock-left"));
  // pg_advisory_xact_lock: COMMIT and ROLLBACK release it, whatever the error.
  HttpHistoryBuilder o(1);
  const int r1 = o.request(1, 1);
  o.sql("SELECT", "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", 1, {}, "SELECT 1");
  orderWork(o, true);
  o.answer(r1, 500, "{\"error\":\"serialization failure\"}");
  const int r2 = o.request(1, 1, "settle");
  o.sql("SELECT", "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", 1, {}, "SELECT 1");
  orderWork(o, false);
  o.answer(r2, 201, "{\"order\":1}", "/orders/1");
  const int r3 = o.request(1, 1, "settle");
  o.answer(r3, 409, "{\"error\":\"request in progress\"}");
  const auto rs = judge(o, {{1, 1}}, 999);
  const Violation* w = violationOf(rs, "replay-mismatch");
  REQUIRE(w);
  CHECK((!w->pattern || w->pattern->id != "http-session-lock-left"));
}

TEST_CASE("a retry of a completed key the server held until the client gave up is a replay mismatch, named when a "
          "blocking session lock was left held", "[patterns][http]") {
  // As leakRun, with a blocking pg_advisory_lock: s2's look waits on the lock s1's pooled session still
  // holds, and the client gives up (outcome timeout).
  HttpHistoryBuilder o(1);
  leakUpToTheLook(o, "SELECT pg_advisory_lock(hashtextextended($1, 0))", false);
  const int r3 = o.request(1, 1, "settle");
  o.answer(r3, 0, "", "", "timeout");
  const auto rs = judge(o, {{1, 1}}, 999);
  const Violation* v = violationOf(rs, "replay-mismatch");
  REQUIRE(v);
  CHECK_THAT(v->message, Contains("r3 (to s2, r2 to s1) retried the completed key 1 and got no answer in"));
  CHECK_THAT(v->observed.get<std::string>(), Contains("no answer"));
  REQUIRE(v->pattern);
  CHECK(v->pattern->id == "http-session-lock-left");
  CHECK_THAT(v->pattern->explanation, Contains("(r3 got no answer)"));
  // The same wait for a key that never completed is liveness's to judge, not a replay's.
  HttpHistoryBuilder n(1);
  const int q1 = n.request(1, 1);
  n.answer(q1, 0, "", "", "timeout");
  const auto ns = judge(n, {{1, 0}}, 1000);
  CHECK(violationOf(ns, "replay-mismatch") == nullptr);
}

TEST_CASE("a retry of a key not yet completed that the server held until the client gave up is a stuck key, "
          "though the key completed later", "[patterns][http]") {
  // r1's COMMIT fails and its blocking session lock stays on s1's connection 1; r2, the retry on s2, waits on
  // it until the client gives up (timeout); the pool then closed the idle session, and r3 completes.
  auto run = [](bool overlapping) {
    HttpHistoryBuilder o(1);
    const char* lock = "SELECT pg_advisory_lock(hashtextextended($1, 0))";
    const int r1 = o.request(1, 1);
    o.sql("SELECT", lock, 1, {}, "SELECT 1");
    orderWork(o, true);
    o.answer(r1, 500, "{\"error\":\"serialization failure\"}");
    o.to("s2");
    const int r2 = o.request(1, 1);
    // Another request of the key in flight meanwhile: r2 may have waited for it, as a server may.
    const int other = overlapping ? o.request(1, 1) : 0;
    o.answer(r2, 0, "", "", "timeout");
    if (overlapping) o.answer(other, 0, "", "", "timeout");
    o.to("s1");
    const int r3 = o.request(1, 1, "settle");
    o.sql("SELECT", lock, 2, {}, "SELECT 1");
    orderWork(o, false);
    o.answer(r3, 201, "{\"order\":1}", "/orders/1");
    return judge(o, {{1, 1}}, 999);
  };
  const auto rs = run(false);
  const Violation* v = violationOf(rs, "stuck-key");
  REQUIRE(v);
  CHECK_THAT(v->message, Contains("r2 (to s2) got no answer to key 1 in"));
  CHECK_THAT(v->message, Contains("the key completed only later (r3)"));
  CHECK_THAT(v->observed.get<std::string>(), Contains("no answer in"));
  REQUIRE(v->pattern);
  CHECK(v->pattern->id == "http-session-lock-left");
  CHECK(violationOf(rs, "replay-mismatch") == nullptr);
  CHECK(violationOf(run(true), "stuck-key") == nullptr);
}

TEST_CASE("http-unlock-on-other-connection: an unlock sent on a connection that held no lock, a completed key "
          "refused", "[patterns][http]") {
  // r1 locks on connection 1 and its unlock goes out on connection 2 (a pool's query() while the locking
  // client is still checked out); r2 is refused on connection 2. With the unlock on connection 1, the same
  // refusal names neither lock pattern.
  auto run = [](int unlockConn) {
    HttpHistoryBuilder o(1);
    const int r1 = o.request(1, 1);
    o.sql("SELECT", kLock, 1, {}, "SELECT 1");
    orderWork(o, false);
    o.answer(r1, 201, "{\"order\":1}", "/orders/1");
    o.sql("SELECT", kUnlock, unlockConn, {}, "SELECT 1");
    const int r2 = o.request(1, 1);
    o.sql("SELECT", kLock, 2, {}, "SELECT 1");
    o.answer(r2, 409, "{\"error\":\"request in progress\"}");
    return judge(o, {{1, 1}}, 999);
  };
  const auto rs = run(2);
  const Violation* v = violationOf(rs, "replay-mismatch");
  REQUIRE(v);
  REQUIRE(v->pattern);
  CHECK(v->pattern->id == "http-unlock-on-other-connection");
  CHECK_THAT(v->pattern->explanation, Contains("s1's connection 1 took a session-level lock"));
  CHECK_THAT(v->pattern->explanation, Contains("went out on its connection 2, which held no lock"));
  CHECK_THAT(v->pattern->explanation, Contains("(r2 got 409)"));
  const Violation* w = violationOf(run(1), "replay-mismatch");
  REQUIRE(w);
  CHECK((!w->pattern || (w->pattern->id != "http-unlock-on-other-connection" && w->pattern->id != "http-session-lock-left")));
}

TEST_CASE("a retry refused while a hold kept the first request's unlock waiting is no replay mismatch",
          "[patterns][http]") {
  // r1 commits and is answered 201; its unlock, sent after the answer, is held by a fault while r2 reaches
  // s2 and is refused (409): the lock was still the first request's, kept by the harness.
  auto run = [](bool held) {
    HttpHistoryBuilder o(1);
    const int r1 = o.request(1, 1);
    o.sql("SELECT", kLock, 1, {}, "SELECT 1");
    orderWork(o, false);
    if (held) o.fault("hold:s1:before:SELECT#3");
    o.answer(r1, 201, "{\"order\":1}", "/orders/1");
    o.to("s2");
    const int r2 = o.request(1, 1, "retry");
    o.answer(r2, 409, "{\"error\":\"request in progress\"}");
    o.sql("SELECT", kUnlock, 1, {}, "SELECT 1");
    return judge(o, {{1, 1}}, 999);
  };
  CHECK(violationOf(run(true), "replay-mismatch") == nullptr);
  CHECK(violationOf(run(false), "replay-mismatch") != nullptr); // the same refusal with nothing held is the server's
}

TEST_CASE("http-key-in-memory: two replicas each executed a key, and no server step looked anything up",
          "[patterns][http]") {
  auto run = [](bool looksUp) {
    HttpHistoryBuilder o(1);
    for (const char* server : {"s1", "s2"}) {
      o.to(server);
      const int r = o.request(1, 1, std::string(server) == "s1" ? "original" : "retry");
      o.sql("BEGIN");
      if (looksUp)
        o.sql("SELECT", "SELECT body FROM idempotency_keys WHERE key = $1", 1, {"idempotency_keys"}, "SELECT 0");
      o.sql("INSERT", "INSERT INTO orders(ref) VALUES ($1) RETURNING id", 1, {"orders"}, "INSERT 0 1");
      o.sql("UPDATE", "UPDATE stock SET qty = qty - $1 WHERE sku = $2", 1, {"stock"}, "UPDATE 1");
      o.sql("COMMIT", "COMMIT", 1, {}, "COMMIT");
      o.answer(r, 201, "{\"order\":1}", "/orders/1");
    }
    return judge(o, {{1, 2}}, 998);
  };
  const auto rs = run(false);
  const Violation* v = violationOf(rs, "double-effect");
  REQUIRE(v);
  REQUIRE(v->pattern);
  CHECK(v->pattern->id == "http-key-in-memory");
  CHECK_THAT(v->pattern->explanation, Contains("executed by 2 server processes (s1, s2)"));
  // A server that looked its key up in a table of its own keeps it where every process sees it: not this.
  const auto looked = run(true);
  for (const auto& r : looked)
    for (const auto& x : r.violations)
      if (x.kind == "double-effect") CHECK((!x.pattern || x.pattern->id != "http-key-in-memory"));
}
