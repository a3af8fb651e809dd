// ack-after-failure (checkers/patterns/ack_after_failure.cc): an entry acknowledged after the transaction of
// its process failed, with nothing committed since — kafka-python's close() committing the position it
// fetched to on its error path, an XACK in a `finally`. Histories written by hand, as in patterns_test.cc.
#include "patterns_util.h"

using namespace idem;
using namespace idem::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

TEST_CASE("ack-after-failure: an error answered to the credit, then close() commits the fetched position", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"error:before:UPDATE#2"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2, 3});
  b.spawn("c1");
  const int64_t fetch = b.brokerStep("c1", "kafka", "FETCH", e);
  credit(b, "c1", e[0], false);
  b.step("c1", "pg", "BEGIN");
  b.fault("c1", "error:before:UPDATE#2");
  const int64_t failed = b.sql("c1", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2",
                               {"wallets"}, "ERROR: 57014 canceling statement", true, "answered");
  b.step("c1", "pg", "ROLLBACK");
  // The error path closes the consumer: with auto-commit on, close() commits the position (past all three).
  const int64_t commit = b.brokerStep("c1", "kafka", "COMMIT_OFFSET", {}, {e[0], e[1], e[2]});
  b.brokerStep("c1", "kafka", "LEAVE_GROUP", {});
  b.exit("c1", 1, std::nullopt, "self");
  b.finalOp(balances(100));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "ack-after-failure");
  CHECK(v.pattern->name == "acknowledge what failed");
  CHECK(v.pattern->explanation ==
        "c1 held entry 1-1 of event 2 (FETCH#1); then PostgreSQL answered UPDATE#2 with an error, and c1 acknowledged "
        "the entry (COMMIT_OFFSET#1) as it shut down with no COMMIT since: acknowledged, it was never handed over "
        "again, event 2 lost");
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(fetch));
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(failed));
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(commit));
  CHECK_THAT(v.pattern->fix, StartsWith("acknowledge an entry only once its effect committed"));
  CHECK_THAT(v.pattern->fix, Contains("close(autocommit=False)"));
}

TEST_CASE("ack-after-failure: a dropped connection under the credit, then an XACK in a finally, and work goes on",
          "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"drop:before:COMMIT#1"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", {e[0]});
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
  b.fault("c1", "drop:before:COMMIT#1");
  b.step("c1", "pg", "COMMIT", "COMMIT", "dropped-before");
  b.ack("c1", {e[0]});
  b.read("c1", "XREADGROUP", {e[1]});
  credit(b, "c1", e[1]);
  b.finalOp(balances(300));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "ack-after-failure");
  CHECK(v.pattern->explanation ==
        "c1 held entry 1-0 of event 1 (XREADGROUP#1); then its connection to PostgreSQL was cut at COMMIT#1, and c1 "
        "acknowledged the entry (XACK#1) with no COMMIT since: acknowledged, it was never handed over again, event 1 "
        "lost");
  CHECK_THAT(v.pattern->fix, !Contains("kafka-python"));
}

TEST_CASE("ack-after-failure: a reject without requeue after a failed credit is told as a discard", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"drop:after:BEGIN#1"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1});
  b.spawn("c1");
  b.brokerStep("c1", "rabbitmq", "DELIVER", {e[0]});
  b.fault("c1", "drop:after:BEGIN#1");
  b.step("c1", "pg", "BEGIN", "BEGIN", "dropped-after");
  b.discard("c1", "rabbitmq", "REJECT", {e[0]});
  b.finalOp(balances(0));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "ack-after-failure");
  CHECK_THAT(v.pattern->explanation, Contains("and c1 discarded the entry (REJECT#1) with no COMMIT since: discarded,"));
  CHECK_THAT(v.pattern->fix, Contains("requeue=True"));
  CHECK_THAT(v.pattern->fix, !Contains("kafka-python"));
}

TEST_CASE("ack-after-failure: a process working entries at once commits another's work on its other connection",
          "[patterns]") {
  // A prefetch of 10 on a pool: entry 1's transaction fails on connection 1 while entry 2's commits on
  // connection 2; then the handler of entry 1 discards it. Entry 2's COMMIT is no retry of entry 1's work.
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"error:before:COMMIT#1"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  b.brokerStep("c1", "rabbitmq", "DELIVER", {e[0]});
  b.brokerStep("c1", "rabbitmq", "DELIVER", {e[1]});
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
  b.pgConn = 2;
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
  b.pgConn = 1;
  b.fault("c1", "error:before:COMMIT#1");
  const int64_t failed = b.sql("c1", "COMMIT", "COMMIT", {}, "ERROR: 57014 canceling statement", true, "answered");
  b.pgConn = 2;
  b.step("c1", "pg", "COMMIT");
  b.brokerStep("c1", "rabbitmq", "ACK", {}, {e[1]});
  b.pgConn = 1;
  b.step("c1", "pg", "ROLLBACK");
  const int64_t nack = b.discard("c1", "rabbitmq", "NACK", {e[0]});
  b.finalOp(balances(300));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "ack-after-failure");
  CHECK_THAT(v.pattern->explanation, Contains("PostgreSQL answered COMMIT#1 with an error, and c1 discarded the entry (NACK#1)"));
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(failed));
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(nack));
  CHECK_THAT(v.pattern->fix, Contains("ackOrNack(err, {strategy: 'nack', requeue: true})"));
}

TEST_CASE("ack-after-failure: not named when a COMMIT took effect after the failure, nor for a kill", "[patterns]") {
  Scenario s = builtin("wallet");
  SECTION("the failure, then a COMMIT of other work, then the acknowledgement") {
    HistoryBuilder b(s, {"error:before:UPDATE#1"});
    b.initial(balances(0));
    auto e = sendWallet(b, kAmounts, {1, 2});
    b.spawn("c1");
    b.brokerStep("c1", "kafka", "FETCH", e);
    b.step("c1", "pg", "BEGIN");
    b.fault("c1", "error:before:UPDATE#1");
    b.sql("c1", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2", {"wallets"},
          "ERROR: 57014 canceling statement", true, "answered");
    b.step("c1", "pg", "ROLLBACK");
    credit(b, "c1", e[1], false);
    b.brokerStep("c1", "kafka", "COMMIT_OFFSET", {}, {e[0], e[1]});
    b.finalOp(balances(300));
    const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
    CHECK(idOf(v) != "ack-after-failure");
  }
  SECTION("acknowledged, then killed before the COMMIT: ack-before-effect") {
    HistoryBuilder b(s, {"before:COMMIT#1"});
    b.initial(balances(0));
    auto e = sendWallet(b, kAmounts, {1});
    b.spawn("c1");
    b.read("c1", "XREADGROUP", {e[0]});
    b.ack("c1", {e[0]});
    b.step("c1", "pg", "BEGIN");
    b.step("c1", "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
    b.step("c1", "pg", "COMMIT", "COMMIT", "killed-before");
    b.kill("c1", "before:COMMIT#1");
    b.finalOp(balances(0));
    const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
    CHECK(idOf(v) == "ack-before-effect");
  }
}

TEST_CASE("ack-after-failure: a client that read ahead, each entry in a transaction with a mark and a credit",
          "[patterns]") {
  // librdkafka fetched the next batch (entries 2 to 4) before the app worked through the first (entry 1), and
  // each entry is a transaction of two writes: the entries are no longer the writes after their fetch in
  // order. The transaction of event 3 lost its connection; close() committed the position past it.
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"drop:before:COMMIT#3"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2, 3, 4});
  b.spawn("c1");
  b.brokerStep("c1", "kafka", "FETCH", {e[0]});
  b.brokerStep("c1", "kafka", "FETCH", {e[1], e[2], e[3]});
  for (int n = 0; n < 3; ++n) {
    b.step("c1", "pg", "BEGIN");
    b.step("c1", "pg", "INSERT", "INSERT INTO processed_messages(event_id) VALUES ($1) ON CONFLICT DO NOTHING");
    b.step("c1", "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
    if (n < 2) b.step("c1", "pg", "COMMIT");
  }
  b.fault("c1", "drop:before:COMMIT#3");
  b.step("c1", "pg", "COMMIT", "COMMIT", "dropped-before");
  b.brokerStep("c1", "kafka", "COMMIT_OFFSET", {}, {e[0], e[1], e[2]});
  b.exit("c1", 1, std::nullopt, "self");
  b.finalOp(balances(100 + 300));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "ack-after-failure");
  CHECK_THAT(v.pattern->explanation, StartsWith("c1 held entry 1-2 of event 3 (FETCH#2)"));
}
