// The anti-pattern classifiers on the steps of a client that sends a transaction's BEGIN under the Sync of
// its first statement (pgjdbc with autocommit off, Npgsql): one step named by that statement, its detail
// "BEGIN; UPDATE …" (docs/steps.md). The statement is inside the transaction the step opens; its COMMIT
// comes later.
#include "patterns_util.h"

#include "checkers/tx_statement.h"

using namespace idem;
using namespace idem::testing;

namespace {

/// One credit as pgjdbc sends it: "BEGIN; UPDATE …" in one step, then COMMIT (with `commit` as its outcome).
void pipelinedCredit(HistoryBuilder& b, const std::string& proc, const std::string& commit = "ok") {
  b.sql(proc, "UPDATE", "BEGIN; UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2", {"wallets"},
        "BEGIN; UPDATE 1");
  b.step(proc, "pg", "COMMIT", "COMMIT", commit);
}

/// A mark as pgjdbc sends it: "BEGIN; INSERT … ON CONFLICT DO NOTHING", then COMMIT.
void pipelinedMark(HistoryBuilder& b, const std::string& proc, const std::string& inserted) {
  b.sql(proc, "INSERT", "BEGIN; INSERT INTO processed(event_id) VALUES ($1) ON CONFLICT DO NOTHING", {"processed"},
        "BEGIN; " + inserted);
  b.step(proc, "pg", "COMMIT");
}

} // namespace

TEST_CASE("a leading BEGIN: the step opens a transaction, its statement is the one it is named by", "[patterns]") {
  ops::Step s;
  s.server = "pg";
  s.verb = "INSERT";
  s.detail = "BEGIN; INSERT INTO processed(event_id) VALUES ($1) ON CONFLICT DO NOTHING";
  CHECK(detail::opensWithBegin(s));
  CHECK(detail::namedStatementText(s) == "INSERT INTO processed(event_id) VALUES ($1) ON CONFLICT DO NOTHING");
  CHECK(detail::txStatement(s).kind == detail::TxStatement::Kind::Other);
  s.detail = "start transaction isolation level serializable; INSERT INTO t VALUES (1)";
  CHECK(detail::opensWithBegin(s));
  CHECK(detail::namedStatementText(s) == "INSERT INTO t VALUES (1)");
  s.verb = "BEGIN"; // a BEGIN alone, or a simple query named by its first keyword: a transaction statement
  s.detail = "BEGIN; INSERT INTO t VALUES (1)";
  CHECK_FALSE(detail::opensWithBegin(s));
  CHECK(detail::namedStatementText(s) == s.detail);
  s.verb = "INSERT"; // a statement that only starts with the letters
  s.detail = "INSERT INTO beginnings VALUES (1)";
  CHECK_FALSE(detail::opensWithBegin(s));
  s.server = "valkey";
  s.detail = "BEGIN; INSERT";
  CHECK_FALSE(detail::opensWithBegin(s));
}

TEST_CASE("a whole transaction in one step commits within it when its last reply is COMMIT", "[patterns]") {
  ops::Step s;
  s.server = "pg";
  s.verb = "INSERT";
  s.detail = "BEGIN; INSERT INTO processed(msg_id) VALUES ($1); UPDATE wallets SET b = b + $1; COMMIT";
  s.summary = "BEGIN; INSERT 0 1; UPDATE 1; COMMIT";
  CHECK(detail::commitsWithin(s));
  s.summary = "BEGIN; INSERT 0 1; UPDATE 1; ROLLBACK"; // the transaction had failed
  CHECK_FALSE(detail::commitsWithin(s));
  s.summary = "BEGIN; INSERT 0 1";
  CHECK_FALSE(detail::commitsWithin(s));
  s.summary = "duplicate key value violates unique constraint \"processed_pkey\"";
  s.error = true;
  CHECK_FALSE(detail::commitsWithin(s));
}

TEST_CASE("effect-without-dedup: a whole transaction pipelined in one step, killed before the acknowledgement",
          "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"after:UPDATE#2"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  auto txn = [&](const std::string& proc, const std::string& outcome = "ok") {
    return b.sql(proc, "UPDATE",
                 "BEGIN; UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2; COMMIT", {"wallets"},
                 "BEGIN; UPDATE 1; COMMIT", false, outcome);
  };
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  txn("c1");
  b.ack("c1", {e[0]});
  const int64_t applied = txn("c1", "killed-after");
  b.kill("c1", "after:UPDATE#2");
  b.spawn("c2");
  b.read("c2", "XAUTOCLAIM", {e[1]});
  txn("c2");
  b.ack("c2", {e[1]});
  b.finalOp(balances(100 + 300 + 300));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "effect-without-dedup");
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(applied));
}

TEST_CASE("ack-before-effect: the credit pipelined with its BEGIN, acknowledged, killed before COMMIT", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"before:COMMIT#2"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  b.ack("c1", {e[0]});
  pipelinedCredit(b, "c1");
  b.ack("c1", {e[1]});
  pipelinedCredit(b, "c1", "killed-before");
  b.kill("c1", "before:COMMIT#2");
  b.spawn("c2");
  b.finalOp(balances(100));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "ack-before-effect");
  CHECK(v.pattern->explanation == "c1 acknowledged entry 1-1 (XACK#2) before committing its effect (as it did for "
                                  "entry 1-0: XACK#1, then UPDATE#1); the kill at before:COMMIT#2 lost event 2");
}

TEST_CASE("effect-without-dedup: the credit pipelined with its BEGIN, committed, redelivered, applied again",
          "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"after:COMMIT#2"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  pipelinedCredit(b, "c1");
  b.ack("c1", {e[0]});
  pipelinedCredit(b, "c1", "killed-after");
  b.kill("c1", "after:COMMIT#2");
  b.spawn("c2");
  b.read("c2", "XAUTOCLAIM", {e[1]});
  pipelinedCredit(b, "c2");
  b.ack("c2", {e[1]});
  b.finalOp(balances(100 + 300 + 300));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "effect-without-dedup");
}

TEST_CASE("dedup-outside-transaction: a mark pipelined with its BEGIN and committed apart from the credit",
          "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"before:COMMIT#4"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  pipelinedMark(b, "c1", "INSERT 0 1");
  pipelinedCredit(b, "c1");
  b.ack("c1", {e[0]});
  pipelinedMark(b, "c1", "INSERT 0 1"); // COMMIT#3: the mark of event 2
  pipelinedCredit(b, "c1", "killed-before");
  b.kill("c1", "before:COMMIT#4");
  b.spawn("c2");
  b.read("c2", "XAUTOCLAIM", {e[1]});
  pipelinedMark(b, "c2", "INSERT 0 0"); // nothing inserted: skipped
  b.ack("c2", {e[1]});
  b.finalOp(balances(100));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "dedup-outside-transaction");
  CHECK(v.pattern->explanation == "c1 committed the dedup mark of event 2 (INSERT#2) in its own transaction "
                                  "(COMMIT#3) before its effect; the kill at before:COMMIT#4 came between them, and "
                                  "event 2 was lost");
}

TEST_CASE("a mark and the credit pipelined in one transaction: a redelivery skipped, nothing lost", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"after:COMMIT#2"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  for (size_t i : {0u, 1u}) {
    b.sql("c1", "INSERT", "BEGIN; INSERT INTO processed(event_id) VALUES ($1) ON CONFLICT DO NOTHING", {"processed"},
          "BEGIN; INSERT 0 1");
    b.sql("c1", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2", {"wallets"},
          "UPDATE 1");
    b.step("c1", "pg", "COMMIT", "COMMIT", i == 1 ? "killed-after" : "ok");
    if (i == 0) b.ack("c1", {e[0]});
  }
  b.kill("c1", "after:COMMIT#2");
  b.spawn("c2");
  b.read("c2", "XAUTOCLAIM", {e[1]});
  b.sql("c2", "INSERT", "BEGIN; INSERT INTO processed(event_id) VALUES ($1) ON CONFLICT DO NOTHING", {"processed"},
        "BEGIN; INSERT 0 0");
  b.step("c2", "pg", "COMMIT");
  b.ack("c2", {e[1]});
  b.finalOp(balances(400));
  CHECK(merge(checkAll(s, b.ops())) == Verdict::Pass);
}
