// The anti-pattern classifiers of the HTTP workload (checkers/patterns/http_*.cc) on histories written by
// hand: the key's state outside the effect's transaction, no request hash, and their look-alikes.
#include "check_util.h"

#include "checkers/patterns/patterns.h"

using namespace idem;
using namespace idem::testing;
using Catch::Matchers::Contains;

namespace {

const Violation* violationOf(const std::vector<CheckResult>& rs, const std::string& kind) {
  for (const auto& r : rs)
    for (const auto& v : r.violations)
      if (v.kind == kind) return &v;
  return nullptr;
}

} // namespace

TEST_CASE("http-key-outside-transaction: the key committed apart, a kill, the key stuck", "[patterns][http]") {
  HttpHistoryBuilder o(2);
  o.request(1, 1);
  o.sql("BEGIN");
  o.sql("INSERT", "INSERT INTO idempotency_keys(key, request_hash, state) VALUES ($1, $2, 'in_progress')");
  o.sql("COMMIT");
  o.sql("BEGIN");
  o.sql("INSERT", "INSERT INTO orders ...");
  o.sql("COMMIT");
  o.kill("after:COMMIT#2");
  o.lost(1);
  for (int i = 0; i < 3; ++i) o.answer(o.request(1, 1, "retry"), 409, "{\"error\":\"in progress\"}");
  auto rs = judge(o, {{1, 1}}, 999);
  const Violation* v = violationOf(rs, "stuck-key");
  REQUIRE(v);
  REQUIRE(v->pattern);
  CHECK(v->pattern->id == "http-key-outside-transaction");
  CHECK(v->pattern->explanation == "s1 committed the request's work in separate transactions (COMMIT#1, COMMIT#2) "
                                  "and was killed at after:COMMIT#2 before the transaction that completes the key; "
                                  "the key was left in progress");
}

TEST_CASE("http: a kill after the one transaction of a request names no key pattern", "[patterns][http]") {
  // The classifier alone, on a double effect whose request committed once: the key's state was not apart.
  HttpHistoryBuilder o(2);
  o.request(1, 1);
  o.sql("BEGIN");
  o.sql("INSERT", "INSERT INTO orders ...");
  o.sql("COMMIT");
  o.kill("after:COMMIT#1");
  auto ops = o.ops();
  Scenario s = builtin("orders");
  detail::HistoryView h(s, ops);
  Violation v;
  v.kind = "double-effect";
  v.invariant = "http:exactly-once";
  CHECK_FALSE(detail::patterns::httpKeyOutsideTransaction(h, v));
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
  o.request(1, 1);
  o.sql("BEGIN");
  o.sql("INSERT", "INSERT INTO idempotency_keys(key, request_hash, state) VALUES ($1, $2, 'in_progress')");
  o.sql("COMMIT");
  o.kill("after:COMMIT#1");
  o.lost(1);
  for (int i = 0; i < 3; ++i) o.answer(o.request(1, 1, "retry"), 409, "{\"error\":\"in progress\"}");
  auto rs = judge(o, {}, 1000);
  const Violation* v = violationOf(rs, "stuck-key");
  REQUIRE(v);
  REQUIRE(v->pattern);
  CHECK(v->pattern->explanation == "s1 committed part of the request's work in a transaction of its own (COMMIT#1) "
                                  "and was killed at after:COMMIT#1 before the transaction that completes the key; "
                                  "the key was left in progress");
}
