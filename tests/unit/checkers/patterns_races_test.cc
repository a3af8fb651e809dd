// The classifiers of races and reruns (checkers/patterns/) on histories written by hand: check-then-act,
// an unguarded version, a transaction run again after an ambiguous commit, and their look-alikes.
#include "patterns_util.h"

using namespace idem;
using namespace idem::testing;
using Catch::Matchers::Contains;

namespace {

/// c1 and c2 hold event 1 at once (c2 claimed it while c1 worked): both SELECT, then both INSERT.
std::vector<Op> raceRun(const Scenario& s, const std::string& insert) {
  HistoryBuilder b(s);
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1});
  b.spawn("c1");
  b.spawn("c2");
  b.read("c1", "XREADGROUP", e);
  b.read("c2", "XAUTOCLAIM", e);
  for (const char* p : {"c1", "c2"}) {
    b.step(p, "pg", "BEGIN");
    b.step(p, "pg", "SELECT", "SELECT 1 FROM seen_events WHERE event_id = $1");
  }
  for (const char* p : {"c1", "c2"}) {
    b.step(p, "pg", "INSERT", insert);
    b.step(p, "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
    b.step(p, "pg", "COMMIT");
    b.ack(p, e);
  }
  b.finalOp(balances(200));
  return b.ops();
}

} // namespace

TEST_CASE("check-then-act: two SELECTs before either INSERT, no unique constraint", "[patterns]") {
  Scenario s = builtin("wallet");
  const Violation& v =
      ofKind(failing(s, raceRun(s, "INSERT INTO seen_events (event_id) VALUES ($1)"), "invariant:balance"), "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "check-then-act");
  CHECK(v.pattern->explanation == "c1 and c2 both checked for event 1 (c1 SELECT#1, c2 SELECT#2) before the other's "
                                  "record was committed (c1 INSERT#1, COMMIT#1; c2 INSERT#2, COMMIT#2); with no unique "
                                  "constraint both inserts went in and both applied it");
}

TEST_CASE("the same race with INSERT ... ON CONFLICT: not check-then-act", "[patterns]") {
  Scenario s = builtin("wallet");
  const auto vs = failing(s, raceRun(s, "INSERT INTO seen_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING"),
                          "invariant:balance");
  CHECK(idOf(ofKind(vs, "duplicate")) != "check-then-act");
}

namespace {

/// c1 holds both copies of event 1 (a producer retry) at once and works on them on two connections of a
/// pool, as a Node consumer whose handler is not awaited: both SELECT before either COMMIT. `other`
/// delivers event 2 to c1 between the copies.
std::vector<Op> poolRaceRun(const Scenario& s, bool other) {
  HistoryBuilder b(s);
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, other ? std::vector<int>{1, 2, 1} : std::vector<int>{1, 1});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", {e[0]});
  b.read("c1", "XREADGROUP", other ? std::vector<std::string>{e[1], e[2]} : std::vector<std::string>{e[1]});
  const std::string copy = other ? e[2] : e[1];
  auto check = [&](int conn) {
    b.pgConn = conn;
    b.step("c1", "pg", "BEGIN");
    b.step("c1", "pg", "SELECT", "SELECT 1 FROM seen_events WHERE event_id = $1");
  };
  auto apply = [&](int conn, const std::string& entry) {
    b.pgConn = conn;
    b.step("c1", "pg", "INSERT", "INSERT INTO seen_events (event_id) VALUES ($1)");
    b.step("c1", "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
    b.step("c1", "pg", "COMMIT");
    b.ack("c1", {entry});
  };
  check(2);
  check(3);
  apply(3, copy);
  apply(2, e[0]);
  b.finalOp(balances(200));
  return b.ops();
}

} // namespace

TEST_CASE("check-then-act in one process: two copies held at once, checked on two connections of a pool",
          "[patterns]") {
  Scenario s = builtin("wallet");
  const Violation& v = ofKind(failing(s, poolRaceRun(s, false), "invariant:balance"), "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "check-then-act");
  CHECK(v.pattern->explanation == "c1 held two copies of event 1 at once (XREADGROUP#1, XREADGROUP#2) and worked on "
                                  "them on two connections: each checked (SELECT#1, SELECT#2) before the other's record "
                                  "was committed (INSERT#2, COMMIT#2; INSERT#1, COMMIT#1); with no unique constraint both "
                                  "inserts went in and both applied it");
  // With event 2 delivered to it meanwhile, which transaction worked on which event is not known: no name.
  const auto vs = failing(s, poolRaceRun(s, true), "invariant:balance");
  CHECK(idOf(ofKind(vs, "duplicate")) != "check-then-act");
}

TEST_CASE("check-then-act in one process: one entry handed to it again while it worked on it, checked on two "
          "connections", "[patterns]") {
  // A broker that redelivers an entry its holder has not acknowledged yet (NATS after AckWait, into the
  // same pull) to that holder: the two deliveries are worked on at once.
  Scenario s = builtin("wallet");
  HistoryBuilder b(s);
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  b.pgConn = 2;
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "SELECT", "SELECT 1 FROM seen_events WHERE event_id = $1");
  b.read("c1", "XAUTOCLAIM", e);
  b.pgConn = 3;
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "SELECT", "SELECT 1 FROM seen_events WHERE event_id = $1");
  for (int conn : {2, 3}) {
    b.pgConn = conn;
    b.step("c1", "pg", "INSERT", "INSERT INTO seen_events (event_id) VALUES ($1)");
    b.step("c1", "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
    b.step("c1", "pg", "COMMIT");
  }
  b.ack("c1", e);
  b.finalOp(balances(200));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "check-then-act");
  CHECK_THAT(v.pattern->explanation, Contains("c1 held two copies of event 1 at once (XREADGROUP#1, XAUTOCLAIM#1)"));
}

namespace {

std::vector<Op> versionsRun(const Scenario& s, const std::string& update) {
  HistoryBuilder b(s);
  b.initial({{"latest-city", rows({{"c1", "", "0"}, {"c2", "", "0"}, {"c3", "", "0"}})}});
  const char* city[] = {"", "Riyadh", "Jeddah"};
  std::vector<std::string> e;
  for (int n : {2, 1}) e.push_back(b.send(n, {{"customer", "c1"}, {"city", city[n]}, {"version", std::to_string(n)}}));
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  for (const auto& entry : e) {
    b.step("c1", "pg", "UPDATE", update);
    b.ack("c1", {entry});
  }
  b.finalOp({{"latest-city", rows({{"c1", "Riyadh", "1"}, {"c2", "", "0"}, {"c3", "", "0"}})}});
  return b.ops();
}

} // namespace

TEST_CASE("unguarded-version: version 1 written after version 2, no comparison", "[patterns]") {
  Scenario s = builtin("customer-city");
  const Violation& v = ofKind(
      failing(s, versionsRun(s, "UPDATE customers SET city = $1, version = $2 WHERE id = $3"), "invariant:latest-city"),
      "stale-version");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "unguarded-version");
  CHECK(v.pattern->explanation == "c1 wrote event 1 (version 1) (UPDATE#2) after c1 wrote event 2 (version 2) "
                                  "(UPDATE#1); the statement did not compare versions, so the older one won");
  CHECK_THAT(v.pattern->fix, Contains("version < $new"));
}

TEST_CASE("a stale version through a guarded statement: not unguarded-version", "[patterns]") {
  Scenario s = builtin("customer-city");
  const Violation& v = ofKind(failing(s, versionsRun(s, "UPDATE customers SET city = $1, version = $2 WHERE id = $3 "
                                                        "AND version < $2"),
                                      "invariant:latest-city"),
                              "stale-version");
  CHECK_FALSE(v.pattern);
}

namespace {

/// c1's connection drops around COMMIT#2 (`outcome`), it reruns the transaction, then acknowledges.
std::vector<Op> dropRun(const Scenario& s, const std::string& outcome, int64_t observed) {
  const std::string point = outcome == "dropped-after" ? "drop:after:COMMIT#2" : "drop:before:COMMIT#2";
  HistoryBuilder b(s, {point});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2, 3});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  credit(b, "c1", e[0]);
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE");
  b.step("c1", "pg", "COMMIT", "COMMIT", outcome);
  b.fault("c1", point);
  credit(b, "c1", e[1]);
  credit(b, "c1", e[2]);
  b.finalOp(balances(observed));
  return b.ops();
}

} // namespace

TEST_CASE("retry-after-ambiguous-commit: a drop after COMMIT, the transaction run again", "[patterns]") {
  Scenario s = builtin("wallet");
  const Violation& v =
      ofKind(failing(s, dropRun(s, "dropped-after", 100 + 2 * 300 + 900), "invariant:balance"), "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "retry-after-ambiguous-commit");
  CHECK(v.pattern->explanation == "c1's connection dropped after COMMIT#2 reached PostgreSQL, so the commit's outcome "
                                  "was unknown; c1 ran the transaction again (UPDATE#3, COMMIT#3) and event 2 was "
                                  "applied again");
}

TEST_CASE("retry-after-ambiguous-commit names the event whose transaction ran again, not another", "[patterns]") {
  // One batch of events 1, 2, 3 and event 2's producer retry: event 2 is applied twice by the retry, event
  // 3 by the rerun of its dropped COMMIT; the rerun's XACK says it was event 3's.
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"drop:after:COMMIT#3"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2, 3, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  credit(b, "c1", e[0]);
  credit(b, "c1", e[1]);
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE");
  b.step("c1", "pg", "COMMIT", "COMMIT", "dropped-after");
  b.fault("c1", "drop:after:COMMIT#3");
  credit(b, "c1", e[2]);
  credit(b, "c1", e[3]);
  b.finalOp(balances(100 + 2 * 300 + 2 * 900));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "retry-after-ambiguous-commit");
  CHECK_THAT(v.pattern->explanation, Contains("c1 ran the transaction again (UPDATE#4, COMMIT#4) and event 3 was "
                                              "applied again"));
}

TEST_CASE("a drop before COMMIT reached PostgreSQL: not an ambiguous commit", "[patterns]") {
  // The first transaction never committed; a duplicate here comes from elsewhere, and is not this pattern.
  Scenario s = builtin("wallet");
  const Violation& v =
      ofKind(failing(s, dropRun(s, "dropped-before", 100 + 2 * 300 + 900), "invariant:balance"), "duplicate");
  CHECK(idOf(v) != "retry-after-ambiguous-commit");
}
