// When two processes worked on the same event at once, the diagnosis names the interleaving: the steps of
// both, in history order, numbered per process as a fault names them, and the holds that acted meanwhile.
// Deliveries one after the other (acknowledged first, or killed first) are no interleaving.
#include "check_util.h"

using namespace idem;
using namespace idem::testing;
using Catch::Matchers::Contains;

namespace {

/// A consumer with a dedup table that does not lock it: BEGIN, SELECT the id, INSERT it, UPDATE, COMMIT.
const char* const kDedupSteps[] = {"BEGIN", "SELECT", "INSERT", "UPDATE", "COMMIT"};

Violation onlyViolation(const std::vector<CheckResult>& rs, const std::string& checker) {
  const CheckResult& r = result(rs, checker);
  INFO(r.error);
  REQUIRE(r.violations.size() == 1);
  return r.violations[0];
}

} // namespace

TEST_CASE("interleaving: a retry worked on by two processes at once is told step by step", "[interleaving]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s);
  b.initial(balances(0));
  auto e = sendWallet(b, {100, 300}, {1, 2, 2}); // event 2 sent again (a producer retry) as 1-2
  b.spawn("c1");
  b.spawn("c2");
  b.read("c1", "XREADGROUP", {e[0], e[1]});
  b.read("c2", "XREADGROUP", {e[2]});
  for (const char* verb : kDedupSteps) b.step("c1", "pg", verb); // event 1, alone
  b.ack("c1", {e[0]});
  std::vector<int64_t> together;
  for (const char* verb : kDedupSteps) { // event 2 on c1, its retry on c2, step for step
    together.push_back(b.step("c1", "pg", verb));
    together.push_back(b.step("c2", "pg", verb));
  }
  together.push_back(b.ack("c1", {e[1]}));
  together.push_back(b.ack("c2", {e[2]}));
  b.finalOp(balances(100 + 2 * 300));
  const Violation v = onlyViolation(checkAll(s, b.ops()), "invariant:balance");
  CHECK(v.kind == "duplicate");
  CHECK(v.events == std::vector<int>{2});
  // c1's own second BEGIN (the run's BEGIN#2), c2's own first (the run's BEGIN#3); c1's work on event 1,
  // acknowledged before, is not listed.
  CHECK(v.message == "event 2 applied twice: sent twice by the producer (entries 1-1 and 1-2), delivered to c1 "
                     "(XREADGROUP#1), delivered again (entry 1-2) to c2 (XREADGROUP#2), c1 and c2 both worked on "
                     "event 2 at once: c1 BEGIN#2, c2 BEGIN#1, c1 SELECT#2, c2 SELECT#1, c1 INSERT#2, c2 INSERT#1, "
                     "c1 UPDATE#2, c2 UPDATE#1, c1 COMMIT#2, c2 COMMIT#1, c1 XACK#2, c2 XACK#1; balance of w1 is "
                     "700, expected 400");
  for (int64_t op : together) CHECK(std::find(v.ops.begin(), v.ops.end(), op) != v.ops.end());
}

TEST_CASE("interleaving: a hold that forced it is named with its release, once", "[interleaving]") {
  Scenario s = builtin("wallet");
  const std::string hold = "hold:c1:before:COMMIT#1:c2:after:XACK#1";
  HistoryBuilder b(s, {hold});
  b.initial(balances(0));
  auto e = sendWallet(b, {100}, {1});
  b.spawn("c1");
  b.spawn("c2");
  b.read("c1", "XREADGROUP", {e[0]});
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE");
  int64_t fired = b.fault("c1", hold); // c1's COMMIT withheld: c2 claims the entry and applies it
  b.read("c2", "XAUTOCLAIM", {e[0]});
  applySimply(b, "c2", e[0], 100);
  int64_t released = b.note("c1", "hold " + hold + " released: c2 reached c2:after:XACK#1");
  b.step("c1", "pg", "COMMIT");
  b.ack("c1", {e[0]});
  b.finalOp(balances(200));
  auto rs = checkAll(s, b.ops());
  const Violation v = onlyViolation(rs, "invariant:balance");
  CHECK(v.kind == "duplicate");
  CHECK(v.message == "event 1 applied twice: delivered to c1 (XREADGROUP#1), redelivered to c2 (XAUTOCLAIM#1), c1 "
                     "and c2 both worked on event 1 at once: c1 BEGIN#1, c1 UPDATE#1, c2 BEGIN#1, c2 UPDATE#1, c2 "
                     "COMMIT#1, c2 XACK#1, c1 COMMIT#1, c1 XACK#1 (c1 held at hold:c1:before:COMMIT#1:c2:after:XACK#1, "
                     "released: c2 reached c2:after:XACK#1); balance of w1 is 200, expected 100");
  CHECK(std::find(v.ops.begin(), v.ops.end(), fired) != v.ops.end());
  CHECK(std::find(v.ops.begin(), v.ops.end(), released) != v.ops.end());
  CHECK(result(rs, "faults").verdict == Verdict::Pass);

  SECTION("a lock wait releases it: the reason, without its detail") {
    HistoryBuilder b2(s, {hold});
    b2.initial(balances(0));
    auto e2 = sendWallet(b2, {100}, {1});
    b2.spawn("c1");
    b2.spawn("c2");
    b2.read("c1", "XREADGROUP", {e2[0]});
    b2.step("c1", "pg", "BEGIN");
    b2.step("c1", "pg", "UPDATE");
    b2.fault("c1", hold);
    b2.read("c2", "XAUTOCLAIM", {e2[0]});
    b2.step("c2", "pg", "BEGIN");
    b2.note("c1", "hold " + hold + " released: another process waits on a PostgreSQL lock (pg_stat_activity), "
                  "which the held process's open transaction may hold");
    b2.step("c1", "pg", "COMMIT");
    b2.ack("c1", {e2[0]});
    b2.step("c2", "pg", "UPDATE");
    b2.step("c2", "pg", "COMMIT");
    b2.ack("c2", {e2[0]});
    b2.finalOp(balances(200));
    const Violation w = onlyViolation(checkAll(s, b2.ops()), "invariant:balance");
    CHECK_THAT(w.message, Contains("c2 BEGIN#1, c1 COMMIT#1, c1 XACK#1, c2 UPDATE#1, c2 COMMIT#1, c2 XACK#1 (c1 held "
                                   "at hold:c1:before:COMMIT#1:c2:after:XACK#1, released: another process waits on a "
                                   "PostgreSQL lock); balance"));
  }
}

TEST_CASE("interleaving: deliveries one after the other are none", "[interleaving]") {
  Scenario s = builtin("wallet");

  SECTION("c1 acknowledges before c2's delivery") {
    HistoryBuilder b(s);
    b.initial(balances(0));
    auto e = sendWallet(b, {100, 300}, {1, 2});
    b.spawn("c1");
    b.spawn("c2");
    b.read("c1", "XREADGROUP", {e[0], e[1]});
    applySimply(b, "c1", e[0], 100);
    applySimply(b, "c1", e[1], 300);
    e.push_back(b.send(2, {{"wallet", "w1"}, {"amount", "300"}}, 2)); // the retry, later
    b.read("c2", "XREADGROUP", {e[2]});
    applySimply(b, "c2", e[2], 300);
    b.finalOp(balances(700));
    const Violation v = onlyViolation(checkAll(s, b.ops()), "invariant:balance");
    CHECK(v.kind == "duplicate");
    CHECK(v.events == std::vector<int>{2});
    CHECK_THAT(v.message, !Contains("at once"));
    CHECK(v.message == "event 2 applied twice: sent twice by the producer (entries 1-1 and 1-2), delivered to c1 "
                       "(XREADGROUP#1), delivered again (entry 1-2) to c2 (XREADGROUP#2); balance of w1 is 700, "
                       "expected 400");
  }

  SECTION("c1 killed, then c2 claims") {
    HistoryBuilder b(s, {"after:COMMIT#2"});
    b.initial(balances(0));
    auto e = sendWallet(b, {100, 300}, {1, 2});
    b.spawn("c1");
    b.spawn("c2");
    b.read("c1", "XREADGROUP", {e[0], e[1]});
    applySimply(b, "c1", e[0], 100);
    b.step("c1", "pg", "BEGIN");
    b.step("c1", "pg", "UPDATE");
    b.step("c1", "pg", "COMMIT", "COMMIT", "killed-after");
    b.kill("c1", "after:COMMIT#2");
    b.read("c2", "XAUTOCLAIM", {e[1]});
    applySimply(b, "c2", e[1], 300);
    b.finalOp(balances(700));
    const Violation v = onlyViolation(checkAll(s, b.ops()), "invariant:balance");
    CHECK(v.kind == "duplicate");
    CHECK(v.message == "event 2 applied twice: delivered to c1 (XREADGROUP#1), c1 killed at after:COMMIT#2, "
                       "redelivered to c2 (XAUTOCLAIM#1); balance of w1 is 700, expected 400");
  }

  SECTION("c1 still holds it but works on another entry: no work on it at once") {
    // c1 read both entries and is slow on the first; c2 claims the second, applies and acknowledges it; c1
    // then applies the second again. c1 had it in hand, but worked on it only after c2 was done.
    HistoryBuilder b(s);
    b.initial(balances(0));
    auto e = sendWallet(b, {100, 300}, {1, 2});
    b.spawn("c1");
    b.spawn("c2");
    b.read("c1", "XREADGROUP", {e[0], e[1]});
    b.step("c1", "pg", "BEGIN");
    b.read("c2", "XAUTOCLAIM", {e[1]});
    applySimply(b, "c2", e[1], 300);
    b.step("c1", "pg", "UPDATE");
    b.step("c1", "pg", "COMMIT");
    b.ack("c1", {e[0]});
    applySimply(b, "c1", e[1], 300);
    b.finalOp(balances(700));
    const Violation v = onlyViolation(checkAll(s, b.ops()), "invariant:balance");
    CHECK(v.kind == "duplicate");
    CHECK_THAT(v.message, !Contains("at once"));
  }
}

TEST_CASE("interleaving: a long one is cut after 12 steps", "[interleaving]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s);
  b.initial(balances(0));
  auto e = sendWallet(b, {100}, {1, 1});
  b.spawn("c1");
  b.spawn("c2");
  b.read("c1", "XREADGROUP", {e[0]});
  b.read("c2", "XREADGROUP", {e[1]});
  for (int i = 0; i < 4; ++i) {
    b.step("c1", "pg", "SELECT");
    b.step("c2", "pg", "SELECT");
  }
  applySimply(b, "c1", e[0], 100);
  applySimply(b, "c2", e[1], 100);
  b.finalOp(balances(200));
  const Violation v = onlyViolation(checkAll(s, b.ops()), "invariant:balance");
  CHECK_THAT(v.message, Contains("c1 and c2 both worked on event 1 at once: c1 SELECT#1, c2 SELECT#1, c1 SELECT#2, c2 "
                                 "SELECT#2, c1 SELECT#3, c2 SELECT#3, c1 SELECT#4, c2 SELECT#4, c1 BEGIN#1, c1 UPDATE#1, "
                                 "c1 COMMIT#1, c1 XACK#1, …; balance"));
}

TEST_CASE("interleaving: stale-version names the older version written while the newer one was", "[interleaving]") {
  Scenario s = builtin("customer-city");
  HistoryBuilder b(s);
  b.initial({{"latest-city", rows({{"c1", "", "0"}, {"c2", "", "0"}, {"c3", "", "0"}})}});
  auto v2 = b.send(2, {{"customer", "c1"}, {"city", "Jeddah"}, {"version", "2"}});
  auto v1 = b.send(1, {{"customer", "c1"}, {"city", "Riyadh"}, {"version", "1"}});
  b.spawn("c1");
  b.spawn("c2");
  b.read("c1", "XREADGROUP", {v2});
  b.read("c2", "XREADGROUP", {v1});
  b.step("c1", "pg", "BEGIN");
  b.step("c2", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE");
  b.step("c1", "pg", "COMMIT");
  b.step("c2", "pg", "UPDATE");
  b.step("c2", "pg", "COMMIT");
  b.ack("c1", {v2});
  b.ack("c2", {v1});
  b.finalOp({{"latest-city", rows({{"c1", "Riyadh", "1"}, {"c2", "", "0"}, {"c3", "", "0"}})}});
  const Violation v = onlyViolation(checkAll(s, b.ops()), "invariant:latest-city");
  CHECK(v.kind == "stale-version");
  CHECK(v.message == "c1 holds version 1 (event 1), expected version 2 (event 2): event 1 delivered to c2 "
                     "(XREADGROUP#2); event 2 delivered to c1 (XREADGROUP#1); c1 worked on event 2 and c2 on event 1 "
                     "at once: c1 BEGIN#1, c2 BEGIN#1, c1 UPDATE#1, c1 COMMIT#1, c2 UPDATE#1, c2 COMMIT#1, c1 XACK#1, "
                     "c2 XACK#1");
}
