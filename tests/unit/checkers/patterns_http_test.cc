// The anti-pattern classifiers of the HTTP workload (checkers/patterns/http_*.cc) on histories written by
// hand: the key's state outside the effect's transaction, no request hash, and their look-alikes.
#include "check_util.h"

#include "checkers/patterns/patterns.h"
#include "checkers/request_faults.h"

using namespace idem;
using namespace idem::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

/// The first request (r1, key 1, payload 1), and its key's row inserted in progress in a transaction of its
/// own: BEGIN, INSERT, COMMIT.
void keyRowApart(HttpHistoryBuilder& o) {
  o.request(1, 1);
  o.sql("BEGIN");
  o.sql("INSERT", "INSERT INTO idempotency_keys(key, request_hash, state) VALUES ($1, $2, 'in_progress')");
  o.sql("COMMIT");
}

/// The order's transaction: BEGIN, INSERT INTO orders, COMMIT.
void orderCommitted(HttpHistoryBuilder& o) {
  o.sql("BEGIN");
  o.sql("INSERT", "INSERT INTO orders ...");
  o.sql("COMMIT");
}

/// The client's three retries of key 1, each answered 409 "in progress".
void retriedInProgress(HttpHistoryBuilder& o) {
  for (int i = 0; i < 3; ++i) o.answer(o.request(1, 1, "retry"), 409, "{\"error\":\"in progress\"}");
}

} // namespace

TEST_CASE("http-key-outside-transaction: the key committed apart, a kill, the key stuck", "[patterns][http]") {
  HttpHistoryBuilder o(2);
  keyRowApart(o);
  orderCommitted(o);
  o.kill("after:COMMIT#2");
  o.lost(1);
  retriedInProgress(o);
  auto rs = judge(o, {{1, 1}}, 999);
  const Violation* v = violationOf(rs, "stuck-key");
  REQUIRE(v);
  REQUIRE(v->pattern);
  CHECK(v->pattern->id == "http-key-outside-transaction");
  CHECK(v->pattern->explanation == "s1 committed the work of r1 (the first request of key 1) in separate transactions "
                                  "(COMMIT#1, COMMIT#2) "
                                  "and was killed at after:COMMIT#2 before the transaction that completes the key; "
                                  "the key was left in progress");
}

TEST_CASE("http: a kill after the one transaction of a request names no key pattern", "[patterns][http]") {
  // The classifier alone, on a double effect whose request committed once: the key's state was not apart.
  HttpHistoryBuilder o(2);
  o.request(1, 1);
  orderCommitted(o);
  o.kill("after:COMMIT#1");
  auto ops = o.ops();
  Scenario s = builtin("orders");
  detail::HistoryView h(s, ops);
  Violation v;
  v.kind = "double-effect";
  v.invariant = "http:exactly-once";
  CHECK_FALSE(detail::patterns::httpKeyOutsideTransaction(h, v));
}

TEST_CASE("http-key-outside-transaction: the order committed first, a kill before the key's row, a retry executed",
          "[patterns][http]") {
  // The server commits the order, then stores the key in a transaction of its own: r1 was killed between.
  // r2 (key 2), served alone afterwards, shows the two transactions a request takes.
  auto history = [](bool keyApart) {
    HttpHistoryBuilder o(2);
    o.request(1, 1);
    orderCommitted(o);
    o.kill("after:COMMIT#1");
    o.lost(1);
    const int r2 = o.request(2, 2);
    orderCommitted(o);
    if (keyApart) {
      o.sql("BEGIN");
      o.sql("INSERT", "INSERT INTO idempotency_keys(key, request_hash, body) VALUES ($1, $2, $3)");
      o.sql("COMMIT");
    }
    o.answer(r2, 201, "{\"order\":2}", "/orders/2");
    const int r3 = o.request(1, 1, "retry");
    orderCommitted(o);
    o.answer(r3, 201, "{\"order\":3}", "/orders/3");
    return o;
  };
  auto o = history(true);
  auto rs = judge(o, {{1, 2}, {2, 1}}, 997);
  const Violation* v = violationOf(rs, "double-effect");
  REQUIRE(v);
  REQUIRE(v->pattern);
  CHECK(v->pattern->id == "http-key-outside-transaction");
  CHECK(v->pattern->explanation == "s1 committed part of the work of r1 (the first request of key 1) in a transaction of its "
                                  "own (COMMIT#1) and was killed at after:COMMIT#1 before the transaction that completes "
                                  "the key; a retry executed the request again (r2 (the first request of key 2) was "
                                  "served in two transactions or more)");
  // Served in one transaction each (no key stored at all): nothing shows the key's state apart.
  auto plain = history(false);
  const auto plainResults = judge(plain, {{1, 2}, {2, 1}}, 997);
  const Violation* w = violationOf(plainResults, "double-effect");
  REQUIRE(w);
  CHECK((!w->pattern || w->pattern->id != "http-key-outside-transaction"));
}

TEST_CASE("http-no-request-hash: a key reused with another payload got the first answer", "[patterns][http]") {
  HttpHistoryBuilder o(2);
  o.answer(o.request(1, 1), 201, "{\"order\":1}");
  o.answer(o.request(1, 2, "mismatch"), 201, "{\"order\":1}");
  auto rs = judge(o, {{1, 1}}, 999);
  const Violation* v = violationOf(rs, "mismatch-accepted");
  REQUIRE(v);
  REQUIRE(v->pattern);
  CHECK(v->pattern->id == "http-no-request-hash");
  CHECK(v->pattern->explanation == "r2 reused key 1 with another payload (payload 2) and got 201: the server found "
                                  "the key and never compared the request with the one it first stored");
  CHECK_THAT(v->pattern->fix, Contains("422"));
}

TEST_CASE("http-no-request-hash: a mismatch sent while the first timed out got the first's stored answer",
          "[patterns][http]") {
  // r1 timed out (held in flight); r2 reused key 1 with payload 2, waited for r1 and got its answer replayed.
  HttpHistoryBuilder o(2);
  const int r1 = o.request(1, 1);
  const int r2 = o.request(1, 2, "mismatch");
  o.sql("INSERT", "INSERT INTO orders(ref, customer) VALUES ($1, $2)", 1, {"orders"});
  o.answer(r2, 201, "{\"order\":1,\"ref\":\"ref-1\"}", "/orders/1");
  o.answer(r1, 201, "{\"order\":1,\"ref\":\"ref-1\"}", "/orders/1", "late");
  auto rs = judge(o, {{1, 1}}, 999);
  const Violation* v = violationOf(rs, "mismatch-accepted");
  REQUIRE(v);
  REQUIRE(v->pattern);
  CHECK(v->pattern->id == "http-no-request-hash");
}

TEST_CASE("a key's two payloads sent at once, each executed: no request hash is named", "[patterns][http]") {
  // A burst's copies: neither found the key when it looked (a race), so no comparison could have run.
  HttpHistoryBuilder o(2);
  int a = o.request(1, 1, "original", 1), b = o.request(1, 2, "mismatch", 2);
  o.sql("INSERT", "INSERT INTO orders(ref, customer) VALUES ($1, $2)", 1, {"orders"});
  o.sql("INSERT", "INSERT INTO orders(ref, customer) VALUES ($1, $2)", 2, {"orders"});
  o.answer(a, 201, "{\"order\":1}");
  o.answer(b, 201, "{\"order\":2}");
  auto rs = judge(o, {{1, 1}, {2, 1}}, 997);
  const Violation* v = violationOf(rs, "mismatch-accepted");
  REQUIRE(v);
  CHECK_FALSE(v->pattern);
}

TEST_CASE("http: a mismatch answered with another error is not a missing hash", "[patterns][http]") {
  HttpHistoryBuilder o(2);
  o.answer(o.request(1, 1), 201, "{\"order\":1}");
  o.answer(o.request(1, 2, "mismatch"), 400, "{\"error\":\"bad\"}");
  auto rs = judge(o, {{1, 1}}, 999);
  const Violation* v = violationOf(rs, "mismatch-status");
  REQUIRE(v);
  CHECK_FALSE(v->pattern);
}

TEST_CASE("http-key-outside-transaction: the key row committed alone, a kill right after", "[patterns][http]") {
  HttpHistoryBuilder o(2);
  keyRowApart(o);
  o.kill("after:COMMIT#1");
  o.lost(1);
  retriedInProgress(o);
  auto rs = judge(o, {}, 1000);
  const Violation* v = violationOf(rs, "stuck-key");
  REQUIRE(v);
  REQUIRE(v->pattern);
  CHECK(v->pattern->explanation == "s1 committed part of the work of r1 (the first request of key 1) in a transaction of its "
                                  "own (COMMIT#1) "
                                  "and was killed at after:COMMIT#1 before the transaction that completes the key; "
                                  "the key was left in progress");
}

TEST_CASE("http-key-outside-transaction: the key row inserted in autocommit, a kill right after", "[patterns][http]") {
  // node-postgres's pool.query(INSERT …) with no BEGIN: PostgreSQL commits the statement on its own. Another
  // connection of the pool has a transaction open meanwhile, which is not this statement's.
  HttpHistoryBuilder o(2);
  o.request(1, 1);
  o.sql("BEGIN", "BEGIN", 2);
  o.sql("INSERT", "INSERT INTO idempotency_keys(key, request_hash, state) VALUES ($1, $2, 'in_progress')", 1);
  o.kill("after:INSERT#1");
  o.lost(1);
  retriedInProgress(o);
  auto rs = judge(o, {}, 1000);
  const Violation* v = violationOf(rs, "stuck-key");
  REQUIRE(v);
  REQUIRE(v->pattern);
  CHECK(v->pattern->id == "http-key-outside-transaction");
  CHECK(v->pattern->explanation == "s1 committed part of the work of r1 (the first request of key 1) in a transaction of its "
                                  "own (INSERT#1 in autocommit) and was killed at after:INSERT#1 before the transaction "
                                  "that completes the key; the key was left in progress");
}

TEST_CASE("http-key-outside-transaction: a write in its connection's open transaction is no autocommit, whatever "
          "another connection committed", "[patterns][http]") {
  // Connection 1's transaction holds the INSERT, killed before its COMMIT; connection 2 committed a
  // transaction of its own meanwhile, which does not end connection 1's.
  HttpHistoryBuilder o(2);
  o.request(1, 1);
  o.sql("BEGIN", "BEGIN", 1);
  o.sql("BEGIN", "BEGIN", 2);
  o.sql("COMMIT", "COMMIT", 2);
  o.sql("INSERT", "INSERT INTO idempotency_keys(key, request_hash, state) VALUES ($1, $2, 'in_progress')", 1);
  o.kill("after:INSERT#1");
  auto ops = o.ops();
  Scenario s = builtin("orders");
  detail::HistoryView h(s, ops);
  Violation v;
  v.kind = "stuck-key";
  v.invariant = "http:liveness";
  auto found = detail::patterns::httpKeyOutsideTransaction(h, v);
  REQUIRE(found); // connection 2's COMMIT is the one commit of the request's work
  CHECK_THAT(found->explanation, Contains("in a transaction of its own (COMMIT#1)"));
  CHECK_THAT(found->explanation, !Contains("INSERT#1 in autocommit"));
}

namespace {

/// A burst of two copies of key 1 served on connections 1 and 2 of s1, each: BEGIN, a SELECT of the key,
/// the order, the key row with no ON CONFLICT, COMMIT; `lookedLate`: connection 2 looked after connection 1
/// committed (as behind a lock).
HttpHistoryBuilder raced(bool lookedLate) {
  HttpHistoryBuilder o(1);
  int a = o.request(1, 1, "original", 1), b = o.request(1, 1, "retry", 2);
  const std::vector<std::string> keys{"idempotency_keys"}, orders{"orders"};
  auto select = [&](int conn) { o.sql("SELECT", "SELECT request_hash FROM idempotency_keys WHERE key = $1", conn, keys); };
  auto work = [&](int conn) {
    o.sql("INSERT", "INSERT INTO orders(ref, customer) VALUES ($1, $2)", conn, orders);
    o.sql("INSERT", "INSERT INTO idempotency_keys(key, request_hash, status) VALUES ($1, $2, 201)", conn, keys);
    o.sql("COMMIT", "COMMIT", conn);
  };
  o.sql("BEGIN", "BEGIN", 1);
  o.sql("BEGIN", "BEGIN", 2);
  select(1);
  if (!lookedLate) select(2);
  work(1);
  if (lookedLate) select(2);
  work(2);
  o.answer(a, 201, "{\"id\":1}", "/orders/1");
  o.answer(b, 201, "{\"id\":2}", "/orders/2");
  return o;
}

} // namespace

namespace {

/// Key 1's double effect as the checker cites it: the requests of key 1 and every answer.
Violation keyOneDoubled(const std::vector<Op>& ops) {
  Violation v;
  v.kind = "double-effect";
  v.invariant = "http:exactly-once";
  v.key = "key 1";
  v.observed = 2;
  for (int64_t i = 0; i < static_cast<int64_t>(ops.size()); ++i) {
    const auto* r = ops[static_cast<size_t>(i)].as<ops::Request>();
    if ((r && r->key == 1) || ops[static_cast<size_t>(i)].as<ops::Response>()) v.ops.push_back(i);
  }
  return v;
}

} // namespace

TEST_CASE("http-check-then-insert: two copies of a key each looked it up before the other's row was committed",
          "[patterns][http]") {
  auto o = raced(false);
  auto rs = judge(o, {{1, 2}}, 998);
  const Violation* v = violationOf(rs, "double-effect");
  REQUIRE(v);
  REQUIRE(v->pattern);
  CHECK(v->pattern->id == "http-check-then-insert");
  CHECK(v->pattern->explanation == "two requests of key 1 ran at once: s1's connection 1 and s1's connection 2 each looked "
                                  "the key up (SELECT#1, SELECT#2) before the other's key row was committed (INSERT#2, "
                                  "COMMIT#1; INSERT#4, COMMIT#2); with no unique constraint on the key both inserts went "
                                  "in, and both requests executed");
  CHECK_THAT(v->pattern->fix, Contains("ON CONFLICT (key) DO NOTHING"));
  // The second execution's answer differs from the first's: that replay violation is the double effect's.
  const Violation* m = violationOf(rs, "replay-mismatch");
  REQUIRE(m);
  REQUIRE(m->pattern);
  CHECK(m->pattern->id == "http-check-then-insert");

  // A third key row committed meanwhile (another key's request in flight): which two were this key's is not
  // in the steps, so nothing is named.
  auto ops = o.ops();
  Scenario s = builtin("orders");
  detail::HistoryView h(s, ops);
  Violation three = *v;
  three.observed = 3;
  CHECK_FALSE(detail::patterns::httpCheckThenInsert(h, three));
}

TEST_CASE("http-check-then-insert: a look-up after the other's commit names no race", "[patterns][http]") {
  auto o = raced(true);
  auto ops = o.ops();
  Scenario s = builtin("orders");
  detail::HistoryView h(s, ops);
  CHECK_FALSE(detail::patterns::httpCheckThenInsert(h, keyOneDoubled(ops)));
}

TEST_CASE("http-key-outside-transaction: the key committed apart, its connection dropped, the key stuck",
          "[patterns][http]") {
  HttpHistoryBuilder o(2);
  keyRowApart(o);
  o.fault("drop:after:COMMIT#1");
  o.answer(1, 503, "{\"error\":\"unavailable\"}");
  for (int i = 0; i < 3; ++i) o.answer(o.request(1, 1, i < 2 ? "retry" : "settle"), 409, "{\"error\":\"in progress\"}");
  auto rs = judge(o, {}, 1000);
  const Violation* v = violationOf(rs, "stuck-key");
  REQUIRE(v);
  // The message names the request the fault hit and the step, as for a kill.
  CHECK_THAT(v->message, Contains("; r1 (the first request of key 1) was in flight when s1's connection dropped at "
                                  "drop:after:COMMIT#1"));
  CHECK(v->kill_point.empty()); // no kill: the server lived on
  REQUIRE(v->pattern);
  CHECK(v->pattern->id == "http-key-outside-transaction");
  CHECK(v->pattern->explanation == "s1 committed part of the work of r1 (the first request of key 1) in a transaction of its "
                                  "own (COMMIT#1) and then s1's connection dropped at drop:after:COMMIT#1 before the "
                                  "transaction that completes the key; the key was left in progress");
}

TEST_CASE("http-key-outside-transaction: PostgreSQL restarted after the key's COMMIT, whose record came after it",
          "[patterns][http]") {
  // A restart fires at the COMMIT's reply and the step is recorded once the server is back: the fault's op
  // comes first in the history.
  HttpHistoryBuilder o(2);
  o.request(1, 1);
  o.sql("BEGIN");
  o.sql("INSERT", "INSERT INTO idempotency_keys(key, request_hash, state) VALUES ($1, $2, 'in_progress')");
  o.fault("restart:after:COMMIT#1:pg");
  o.sql("COMMIT");
  o.answer(1, 503, "{\"error\":\"unavailable\"}");
  for (int i = 0; i < 3; ++i) o.answer(o.request(1, 1, i < 2 ? "retry" : "settle"), 409, "{\"error\":\"in progress\"}");
  auto rs = judge(o, {}, 1000);
  const Violation* v = violationOf(rs, "stuck-key");
  REQUIRE(v);
  REQUIRE(v->pattern);
  CHECK(v->pattern->id == "http-key-outside-transaction");
  CHECK_THAT(v->pattern->explanation, Contains("in a transaction of its own (COMMIT#1) and then PostgreSQL restarted at "
                                               "restart:after:COMMIT#1:pg"));
}

TEST_CASE("http: an error at a retry's COMMIT is named with the retry, and a delay explains no key pattern",
          "[patterns][http]") {
  HttpHistoryBuilder o(2);
  keyRowApart(o);
  o.fault("delay:after:COMMIT#1:60"); // the reply late: nothing of the transaction is lost
  o.sql("BEGIN");
  o.sql("INSERT", "INSERT INTO orders ...");
  o.fault("error:before:COMMIT#2:40001");
  o.answer(1, 503, "{\"error\":\"unavailable\"}");
  o.answer(o.request(1, 1, "retry"), 409, "{\"error\":\"in progress\"}");
  auto rs = judge(o, {}, 1000);
  const Violation* v = violationOf(rs, "stuck-key");
  REQUIRE(v);
  CHECK_THAT(v->message, Contains("r1 (the first request of key 1) was in flight when s1 delayed at "
                                  "delay:after:COMMIT#1:60; r1 (the first request of key 1) was in flight when s1 "
                                  "got an error answer at error:before:COMMIT#2:40001"));
  REQUIRE(v->pattern);
  CHECK(v->pattern->explanation == "s1 committed part of the work of r1 (the first request of key 1) in a transaction of its "
                                  "own (COMMIT#1) and then s1 got an error answer at error:before:COMMIT#2:40001 before "
                                  "the transaction that completes the key; the key was left in progress");
  // The request names as the client wrote them.
  ops::Request r;
  r.id = 3;
  r.key = 2;
  r.body = 2;
  r.role = "retry";
  CHECK(detail::requestName(r) == "r3 (a retry of key 2)");
  r.role = "settle";
  CHECK(detail::requestName(r) == "r3 (the client's retry of key 2 at the end)");
  r.burst = 2;
  CHECK(detail::requestName(r) == "r3 (copy 2 of a burst of key 2)");
}

namespace {

/// r1 takes lock:k1 with a 1000 ms lease on Valkey connection 1 and works in a transaction on PostgreSQL
/// connection 1, held by a delay before its COMMIT; its retry r2 takes the lock `secondAtUs` µs in and
/// orders on connection 2; r1's COMMIT, then its release finding the lock gone. `releasedFirst`: r1 gave the
/// lock back (a compare-and-delete that deleted it) before the retry took it; `otherKey`: another key's
/// request was written before the delay, so the request in flight then was not the key's.
HttpHistoryBuilder leaseRun(int64_t secondAtUs, bool releasedFirst, bool otherKey = false) {
  HttpHistoryBuilder o(2);
  const std::vector<std::string> keys{"idempotency_keys"}, orders{"orders"};
  int a = o.request(1, 1);
  o.valkey("SET", "SET lock:k1 901 NX PX 1000", 1, "+OK", 0);
  o.sql("BEGIN", "BEGIN", 1);
  o.sql("INSERT", "INSERT INTO orders(ref, customer) VALUES ($1, $2)", 1, orders);
  o.sql("INSERT", "INSERT INTO idempotency_keys(key, request_hash, status) VALUES ($1, $2, 201)", 1, keys);
  if (otherKey) o.request(2, 2);
  o.fault("delay:before:COMMIT#1:1500");
  if (releasedFirst) o.valkey("EVAL", "EVAL if redis.call('GET', KEYS[1]) == ARGV[1] then ...", 1, "(integer) 1", 100000);
  int b = o.request(1, 1, "retry");
  o.valkey("SET", "SET lock:k1 902 NX PX 1000", 2, "+OK", secondAtUs);
  o.sql("BEGIN", "BEGIN", 2);
  o.sql("INSERT", "INSERT INTO orders(ref, customer) VALUES ($1, $2)", 2, orders);
  o.sql("INSERT", "INSERT INTO idempotency_keys(key, request_hash, status) VALUES ($1, $2, 201)", 2, keys);
  o.sql("COMMIT", "COMMIT", 1);
  o.valkey("EVAL", "EVAL if redis.call('GET', KEYS[1]) == ARGV[1] then ...", 1, "(integer) 0", secondAtUs + 300000);
  o.sql("COMMIT", "COMMIT", 2);
  o.answer(a, 201, "{\"id\":1}", "/orders/1", "late");
  o.answer(b, 201, "{\"id\":2}", "/orders/2");
  return o;
}

} // namespace

TEST_CASE("http-lease-without-fence: a retry takes the lock whose lease ran out while its holder still worked",
          "[patterns][http]") {
  auto o = leaseRun(1200000, false);
  auto rs = judge(o, {{1, 2}}, 998);
  const Violation* v = violationOf(rs, "double-effect");
  REQUIRE(v);
  REQUIRE(v->pattern);
  CHECK(v->pattern->id == "http-lease-without-fence");
  CHECK(v->pattern->name == "a lock's lease trusted past its expiry");
  CHECK(v->pattern->explanation == "s1 took the lock lock:k1 with a lease of 1000 ms (SET#1) for r1 (the first request of "
                                  "key 1), whose work outlasted it (s1 delayed at delay:before:COMMIT#1:1500): s1 took "
                                  "the same lock again 1.2 s later (SET#2), before the first holder's transaction "
                                  "(BEGIN#1 … COMMIT#1) committed, and both executed; its release (EVAL#1) then found the "
                                  "lock no longer its own");
  CHECK_THAT(v->pattern->fix, StartsWith("a lease is no fence: take a fencing token"));
}

TEST_CASE("a lock taken again before its lease ran out, after its holder gave it back, or held back with another "
          "key in flight, names no lease", "[patterns][http]") {
  auto named = [](int64_t secondAtUs, bool releasedFirst, bool otherKey) {
    auto o = leaseRun(secondAtUs, releasedFirst, otherKey);
    auto ops = o.ops();
    Scenario s = builtin("orders");
    detail::HistoryView h(s, ops);
    return detail::patterns::httpLeaseWithoutFence(h, keyOneDoubled(ops)).has_value();
  };
  CHECK(named(1200000, false, false)); // the run of the case above
  CHECK_FALSE(named(500000, false, false));
  CHECK_FALSE(named(1200000, true, false));
  CHECK_FALSE(named(1200000, false, true));
}

TEST_CASE("http-answer-before-commit: a 201 while the COMMIT that was to commit it never reached PostgreSQL",
          "[patterns][http]") {
  // The server wrote its 201 and then sent its COMMIT, which a kill withheld: the client read the 201.
  HttpHistoryBuilder o(1);
  const int r1 = o.request(1, 1);
  o.orderKilledBeforeCommit();
  o.answer(r1, 201, "{\"order\":1}");
  auto rs = judge(o, {{1, 0}}, 1000);
  const Violation* v = violationOf(rs, "lost-effect");
  REQUIRE(v);
  REQUIRE(v->pattern);
  CHECK(v->pattern->id == "http-answer-before-commit");
  CHECK(v->pattern->explanation == "r1 was answered success, but s1's COMMIT#1 that was to commit its work never "
                                  "reached PostgreSQL (the process was killed before it): the server wrote its "
                                  "answer before its transaction committed");
  CHECK_THAT(v->pattern->fix, Contains("await the transaction's commit"));
  // The key retried: executed anew, with another answer than the first one's.
  HttpHistoryBuilder again(1);
  const int a1 = again.request(1, 1);
  again.orderKilledBeforeCommit();
  again.answer(a1, 201, "{\"order\":1}", "/orders/1");
  const int a2 = again.request(1, 1, "retry");
  again.sql("BEGIN");
  again.sql("INSERT", "INSERT INTO orders ...", 1, {"orders"}, "INSERT 0 1");
  again.sql("COMMIT", "COMMIT", 1, {}, "COMMIT");
  again.answer(a2, 201, "{\"order\":2}", "/orders/2");
  const auto againResults = judge(again, {{1, 1}}, 999);
  const Violation* m = violationOf(againResults, "replay-mismatch");
  REQUIRE(m);
  REQUIRE(m->pattern);
  CHECK(m->pattern->id == "http-answer-before-commit");
  CHECK_THAT(m->pattern->explanation, StartsWith("r1 was answered success, but s1's COMMIT#1"));
  // A COMMIT that took effect, answered ROLLBACK, or none at all: not this pattern.
  for (const char* summary : {"COMMIT", "ROLLBACK"}) {
    HttpHistoryBuilder c(1);
    const int q1 = c.request(1, 1);
    c.sql("COMMIT", "COMMIT", 1, {}, summary);
    c.answer(q1, 201, "{\"order\":1}");
    const auto results = judge(c, {{1, 0}}, 1000);
    const Violation* w = violationOf(results, "lost-effect");
    REQUIRE(w);
    CHECK((!w->pattern || w->pattern->id != "http-answer-before-commit"));
  }
}
