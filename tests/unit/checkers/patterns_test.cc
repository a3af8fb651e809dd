// The anti-pattern classifiers (checkers/patterns/) on histories written by hand: each row of the table in
// docs/report.md named from its steps, and the look-alikes where nothing may be named.
#include "check_util.h"

#include "checkers/patterns/patterns.h"

using namespace idem;
using namespace idem::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

const std::vector<int> kAmounts{100, 300, 900, 2700, 8100};

/// The violations of `checker` in a failing run (checkAll classifies them).
std::vector<Violation> failing(const Scenario& s, const std::vector<Op>& ops, const std::string& checker) {
  auto rs = checkAll(s, ops);
  REQUIRE(merge(rs) == Verdict::Fail);
  const auto& r = result(rs, checker);
  INFO(r.error);
  REQUIRE(r.verdict == Verdict::Fail);
  return r.violations;
}

Violation ofKind(const std::vector<Violation>& vs, const std::string& kind) {
  for (const auto& v : vs)
    if (v.kind == kind) return v;
  throw std::runtime_error("no violation of kind " + kind);
}

std::string idOf(const Violation& v) { return v.pattern ? v.pattern->id : ""; }

/// BEGIN, a write, COMMIT, then XACK unless `ack` is false.
void credit(HistoryBuilder& b, const std::string& proc, const std::string& entry, bool ack = true) {
  b.step(proc, "pg", "BEGIN");
  b.step(proc, "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
  b.step(proc, "pg", "COMMIT");
  if (ack) b.ack(proc, {entry});
}

} // namespace

TEST_CASE("ack-before-effect: XACK, then a kill before the UPDATE loses the event", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"after:XACK#4"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2, 3, 4, 5});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  for (int i : {0, 1, 2}) {
    b.ack("c1", {e[i]});
    b.step("c1", "pg", "UPDATE");
  }
  const int64_t ack = b.ack("c1", {e[3]}, "killed-after");
  const int64_t kill = b.kill("c1", "after:XACK#4");
  b.spawn("c2");
  b.read("c2", "XREADGROUP", {e[4]});
  b.ack("c2", {e[4]});
  b.step("c2", "pg", "UPDATE");
  b.finalOp(balances(12100 - 2700));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "ack-before-effect");
  CHECK(v.pattern->name == "acknowledge before the effect is durable");
  CHECK(v.pattern->explanation == "c1 acknowledged entry 1-3 (XACK#4) before committing its effect (as it did for "
                                  "entry 1-0: XACK#1, then UPDATE#1); the kill at after:XACK#4 lost event 4");
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(ack));
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(kill));
  CHECK_THAT(v.pattern->fix, StartsWith("apply the effect and COMMIT first, then XACK"));
  // On Valkey the fix speaks of XACK, word for word as before any other broker.
  CHECK(v.pattern->fix == "apply the effect and COMMIT first, then XACK the entry; keep a processed-events row in "
                          "the effect's transaction (INSERT INTO processed_events(event_id) VALUES ($1) ON CONFLICT "
                          "DO NOTHING, skip when it inserted no row) so that the redelivery after a kill between "
                          "COMMIT and XACK is harmless");
}

TEST_CASE("ack-before-effect on Kafka: an offset commit passed the record before its COMMIT", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"before:COMMIT#1"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  b.brokerStep("c1", "kafka", "FETCH", e);
  const int64_t commit = b.brokerStep("c1", "kafka", "COMMIT_OFFSET", {}, {e[0]});
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
  b.step("c1", "pg", "COMMIT", "COMMIT", "killed-before");
  const int64_t kill = b.kill("c1", "before:COMMIT#1");
  b.spawn("c2");
  b.brokerStep("c2", "kafka", "FETCH", {e[1]});
  credit(b, "c2", e[1], false);
  b.brokerStep("c2", "kafka", "COMMIT_OFFSET", {}, {e[0], e[1]});
  b.finalOp(balances(300));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "ack-before-effect");
  CHECK(v.pattern->explanation == "c1 acknowledged entry 1-0 (COMMIT_OFFSET#1) before committing its effect; the "
                                  "kill at before:COMMIT#1 lost event 1");
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(commit));
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(kill));
  CHECK_THAT(v.pattern->fix, StartsWith("apply the effect and COMMIT first, then commit its offset;"));
  CHECK_THAT(v.pattern->fix, Contains("between COMMIT and the offset commit"));
  CHECK_THAT(v.pattern->fix, !Contains("XACK"));
}

TEST_CASE("ack-before-effect: XACK, then a kill before the COMMIT of the effect's transaction", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"before:COMMIT#1"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  b.ack("c1", {e[0]});
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
  b.step("c1", "pg", "COMMIT", "COMMIT", "killed-before");
  b.kill("c1", "before:COMMIT#1");
  b.spawn("c2");
  b.read("c2", "XAUTOCLAIM", {e[1]});
  b.ack("c2", {e[1]});
  credit(b, "c2", e[1], false);
  b.finalOp(balances(300));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "ack-before-effect");
  CHECK(v.pattern->explanation == "c1 acknowledged entry 1-0 (XACK#1) before committing its effect; the kill at "
                                  "before:COMMIT#1 lost event 1");
}

TEST_CASE("an XACK, then the effect committed before the kill: not ack-before-effect", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"after:COMMIT#1"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  b.ack("c1", {e[0]});
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE");
  b.step("c1", "pg", "COMMIT", "COMMIT", "killed-after");
  b.kill("c1", "after:COMMIT#1");
  b.spawn("c2");
  b.read("c2", "XAUTOCLAIM", {e[1]});
  b.ack("c2", {e[1]}); // event 2 acknowledged without effect, no kill
  b.finalOp(balances(100));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
  CHECK(idOf(v) != "ack-before-effect");
}

namespace {

/// dedup-valkey at after:SET#3: SET seen:ID NX, then the credit; c2 finds event 3 marked and skips it.
std::vector<Op> valkeyMarkRun(const Scenario& s) {
  HistoryBuilder b(s, {"after:SET#3"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2, 3, 4, 5});
  auto seen = [&](int n, const std::string& proc, const std::string& outcome = "ok") {
    b.step(proc, "valkey", "SET", fmt::format("SET seen:{} 1 NX", b.eventId(n)), outcome);
  };
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  for (int i : {0, 1}) {
    seen(i + 1, "c1");
    credit(b, "c1", e[i]);
  }
  seen(3, "c1", "killed-after");
  b.kill("c1", "after:SET#3");
  b.spawn("c2");
  b.read("c2", "XAUTOCLAIM", {e[2], e[3], e[4]});
  seen(3, "c2");
  b.ack("c2", {e[2]});
  for (int i : {3, 4}) {
    seen(i + 1, "c2");
    credit(b, "c2", e[i]);
  }
  b.finalOp(balances(12100 - 900));
  return b.ops();
}

} // namespace

TEST_CASE("dedup-outside-transaction: SET NX in Valkey, a kill before the credit", "[patterns]") {
  Scenario s = builtin("wallet");
  const Violation& v = ofKind(failing(s, valkeyMarkRun(s), "invariant:balance"), "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "dedup-outside-transaction");
  CHECK(v.pattern->explanation ==
        "c1 marked event 3 as processed in Valkey (SET#3) before its effect; the kill at after:SET#3 came between "
        "them; the redelivery to c2 found the mark (SET#4) and skipped it, and event 3 was lost");
  CHECK_THAT(v.pattern->fix, Contains("same transaction") || Contains("effect's transaction"));
}

TEST_CASE("dedup-outside-transaction: SET NX, then a kill inside the credit's transaction", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"after:UPDATE#1"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  b.step("c1", "valkey", "SET", fmt::format("SET seen:{} 1 NX", b.eventId(1)));
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2", "killed-after");
  b.kill("c1", "after:UPDATE#1");
  b.spawn("c2");
  b.read("c2", "XAUTOCLAIM", e);
  b.step("c2", "valkey", "SET", fmt::format("SET seen:{} 1 NX", b.eventId(1))); // (nil): skipped
  b.ack("c2", {e[0]});
  b.step("c2", "valkey", "SET", fmt::format("SET seen:{} 1 NX", b.eventId(2)));
  credit(b, "c2", e[1]);
  b.finalOp(balances(300));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "dedup-outside-transaction");
  CHECK_THAT(v.pattern->explanation, StartsWith("c1 marked event 1 as processed in Valkey (SET#1) before its effect; "
                                                "the kill at after:UPDATE#1 came between them"));
}

namespace {

/// dedup-valkey at error:before:COMMIT#3: SET seen:ID NX, then the credit, whose COMMIT is answered with an
/// error; c1 exits by itself. c2 gets event 3 again and, when `repeats`, finds the mark (SET#4) and skips it.
std::vector<Op> valkeyMarkErrorRun(const Scenario& s, bool repeats) {
  HistoryBuilder b(s, {"error:before:COMMIT#3"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2, 3});
  auto seen = [&](int n, const std::string& proc) {
    b.step(proc, "valkey", "SET", fmt::format("SET seen:{} 1 NX", b.eventId(n)));
  };
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  for (int i : {0, 1}) {
    seen(i + 1, "c1");
    credit(b, "c1", e[i]);
  }
  seen(3, "c1");
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE");
  b.fault("c1", "error:before:COMMIT#3");
  b.sql("c1", "COMMIT", "COMMIT", {}, "ROLLBACK", true);
  b.exit("c1", 1, std::nullopt, "self");
  b.spawn("c2");
  b.read("c2", "XAUTOCLAIM", {e[2]});
  if (repeats) seen(3, "c2");
  b.ack("c2", {e[2]});
  b.finalOp(balances(400));
  return b.ops();
}

} // namespace

TEST_CASE("dedup-outside-transaction: SET NX, then a fault fails the credit and the process exits", "[patterns]") {
  Scenario s = builtin("wallet");
  const Violation& v = ofKind(failing(s, valkeyMarkErrorRun(s, true), "invariant:balance"), "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "dedup-outside-transaction");
  CHECK(v.pattern->explanation == "c1 marked event 3 as processed in Valkey (SET#3) before its effect; the fault "
                                  "error:before:COMMIT#3 ended the effect's transaction and c1 exited (exit 1) before "
                                  "it committed; the redelivery to c2 found the mark (SET#4) and skipped it, and event "
                                  "3 was lost");
}

TEST_CASE("a mark, then an exit of the process: no pattern unless the redelivery stopped at it", "[patterns]") {
  // The process exited by itself (not the harness's kill): the mark is named only when the redelivery is seen
  // to find it; here c2 acknowledged the event without looking, which the mark does not explain.
  Scenario s = builtin("wallet");
  const Violation& v = ofKind(failing(s, valkeyMarkErrorRun(s, false), "invariant:balance"), "lost");
  CHECK_FALSE(v.pattern);
}

TEST_CASE("dedup-outside-transaction: a dedup INSERT committed on its own, then a kill", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"before:COMMIT#4"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  auto mark = [&](const std::string& proc) {
    b.step(proc, "pg", "BEGIN");
    b.step(proc, "pg", "INSERT", "INSERT INTO processed_events(event_id) VALUES ($1) ON CONFLICT DO NOTHING");
    b.step(proc, "pg", "COMMIT");
  };
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  mark("c1");
  credit(b, "c1", e[0]);
  mark("c1"); // COMMIT#3: the mark of event 2
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE");
  b.step("c1", "pg", "COMMIT", "COMMIT", "killed-before");
  b.kill("c1", "before:COMMIT#4");
  b.spawn("c2");
  b.read("c2", "XAUTOCLAIM", {e[1]});
  mark("c2"); // nothing inserted: skipped
  b.ack("c2", {e[1]});
  b.finalOp(balances(100));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "dedup-outside-transaction");
  CHECK(v.pattern->explanation == "c1 committed the dedup mark of event 2 (INSERT#2) in its own transaction "
                                  "(COMMIT#3) before its effect; the kill at before:COMMIT#4 came between them, and "
                                  "event 2 was lost");
}

namespace {

/// c1 commits event 2's mark (`insert`, into `table`) in a transaction of its own and is killed before its
/// credit's COMMIT; c2 gets event 2 again, repeats the mark (its reply: `again`, an error when `refused`)
/// and acknowledges it without the credit.
std::vector<Op> ownMarkRun(const Scenario& s, const std::string& table, const std::string& insert,
                           const std::string& again, bool refused) {
  HistoryBuilder b(s, {"before:COMMIT#4"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  auto mark = [&](const std::string& proc, const std::string& reply, bool error) {
    b.step(proc, "pg", "BEGIN");
    b.sql(proc, "INSERT", insert, {table}, reply, error);
    b.step(proc, "pg", error ? "ROLLBACK" : "COMMIT");
  };
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  mark("c1", "INSERT 0 1", false);
  credit(b, "c1", e[0]);
  mark("c1", "INSERT 0 1", false); // COMMIT#3: the mark of event 2
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE");
  b.step("c1", "pg", "COMMIT", "COMMIT", "killed-before");
  b.kill("c1", "before:COMMIT#4");
  b.spawn("c2");
  b.read("c2", "XAUTOCLAIM", {e[1]});
  mark("c2", again, refused);
  b.ack("c2", {e[1]});
  b.finalOp(balances(100));
  return b.ops();
}

ops::Step insertInto(const std::string& table, const std::string& sql) {
  ops::Step st;
  st.server = "pg";
  st.verb = "INSERT";
  st.detail = sql;
  st.tables = {table};
  return st;
}

} // namespace

TEST_CASE("dedup marks by the statement's shape: ON CONFLICT DO NOTHING or a keyed table, any name", "[patterns]") {
  using detail::patterns::isMark;
  const std::set<std::string> none, keyed{"consumer_offsets_log"};
  CHECK(isMark(insertInto("handled_payments", "INSERT INTO handled_payments(id) VALUES ($1) ON CONFLICT DO NOTHING"), none));
  CHECK(isMark(insertInto("handled_payments", "INSERT INTO handled_payments(id) VALUES ($1) ON CONFLICT (id) DO NOTHING"),
               none));
  CHECK(isMark(insertInto("consumer_offsets_log", "INSERT INTO consumer_offsets_log(message_id) VALUES ($1)"), keyed));
  // The name is the fallback: a dedup table's name marks an INSERT of any shape.
  CHECK(isMark(insertInto("processed_events", "INSERT INTO processed_events(event_id) VALUES ($1)"), none));
  // Effects: an INSERT into a ledger, a table whose key the run never showed, an upsert; and an ON CONFLICT
  // that belongs to a later statement of the text.
  CHECK_FALSE(isMark(insertInto("ledger", "INSERT INTO ledger(wallet, amount) VALUES ($1, $2)"), none));
  CHECK_FALSE(isMark(insertInto("consumer_offsets_log", "INSERT INTO consumer_offsets_log(message_id) VALUES ($1)"), none));
  CHECK_FALSE(isMark(insertInto("ledger", "INSERT INTO ledger(id, amount) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET "
                                          "amount = EXCLUDED.amount"),
                     none));
  CHECK_FALSE(isMark(insertInto("ledger", "INSERT INTO ledger(amount) VALUES (1); INSERT INTO t VALUES (1) ON CONFLICT DO "
                                          "NOTHING"),
                     none));
}

TEST_CASE("dedup-outside-transaction: an ON CONFLICT DO NOTHING mark in a table of any name", "[patterns]") {
  Scenario s = builtin("wallet");
  const std::string insert = "INSERT INTO handled_payments(payment_id) VALUES ($1) ON CONFLICT DO NOTHING";
  const Violation& v =
      ofKind(failing(s, ownMarkRun(s, "handled_payments", insert, "INSERT 0 0", false), "invariant:balance"), "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "dedup-outside-transaction");
  CHECK(v.pattern->explanation == "c1 committed the dedup mark of event 2 (INSERT#2) in its own transaction "
                                  "(COMMIT#3) before its effect; the kill at before:COMMIT#4 came between them; the "
                                  "redelivery to c2 found the mark (INSERT#3 inserted no row) and skipped it, and "
                                  "event 2 was lost");
}

TEST_CASE("dedup-outside-transaction: a mark in a table the run shows keyed, refused as a duplicate key", "[patterns]") {
  Scenario s = builtin("wallet");
  const Violation& v = ofKind(
      failing(s,
              ownMarkRun(s, "consumer_offsets_log", "INSERT INTO consumer_offsets_log(message_id) VALUES ($1)",
                         "duplicate key value violates unique constraint \"consumer_offsets_log_pkey\"", true),
              "invariant:balance"),
      "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "dedup-outside-transaction");
  CHECK_THAT(v.pattern->explanation, Contains("the redelivery to c2 found the mark (INSERT#3 was refused as a duplicate "
                                              "key) and skipped it"));
}

TEST_CASE("a committed INSERT the redelivery is not seen to stop at is no dedup mark: nothing named", "[patterns]") {
  Scenario s = builtin("wallet");
  SECTION("an effect: INSERT into a ledger, no ON CONFLICT, no key shown") {
    const Violation& v = ofKind(failing(s,
                                        ownMarkRun(s, "ledger", "INSERT INTO ledger(wallet, amount) VALUES ($1, $2)",
                                                   "INSERT 0 1", false),
                                        "invariant:balance"),
                                "lost");
    CHECK_FALSE(v.pattern);
  }
  SECTION("ON CONFLICT DO NOTHING, but the redelivery's repeat inserted its row") {
    const std::string insert = "INSERT INTO handled_payments(payment_id) VALUES ($1) ON CONFLICT DO NOTHING";
    const Violation& v =
        ofKind(failing(s, ownMarkRun(s, "handled_payments", insert, "INSERT 0 1", false), "invariant:balance"), "lost");
    CHECK_FALSE(v.pattern);
  }
}

TEST_CASE("lost events that no classifier explains: no pattern is named", "[patterns]") {
  Scenario s = builtin("wallet");
  SECTION("acknowledged with no kill at all") {
    HistoryBuilder b(s);
    b.initial(balances(0));
    auto e = sendWallet(b, kAmounts, {1, 2});
    b.spawn("c1");
    b.read("c1", "XREADGROUP", e);
    credit(b, "c1", e[0]);
    b.ack("c1", {e[1]});
    b.finalOp(balances(100));
    const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
    CHECK_FALSE(v.pattern);
  }
  SECTION("the mark's key names the event, but PostgreSQL committed the effect with it") {
    // The Valkey mark, and a kill after the credit committed: a duplicate-free run; the lost event is
    // acknowledged elsewhere without a kill, so the mark is not what lost it.
    HistoryBuilder b(s);
    b.initial(balances(0));
    auto e = sendWallet(b, kAmounts, {1});
    b.spawn("c1");
    b.read("c1", "XREADGROUP", e);
    b.step("c1", "valkey", "SET", fmt::format("SET seen:{} 1 NX", b.eventId(1)));
    b.ack("c1", {e[0]});
    b.finalOp(balances(0));
    const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
    CHECK_FALSE(v.pattern);
  }
}

TEST_CASE("effect-without-dedup: COMMIT, a kill before XACK, the redelivery applied again", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"after:COMMIT#3"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2, 3, 4, 5});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  credit(b, "c1", e[0]);
  credit(b, "c1", e[1]);
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE");
  b.step("c1", "pg", "COMMIT", "COMMIT", "killed-after");
  b.kill("c1", "after:COMMIT#3");
  b.spawn("c2");
  b.read("c2", "XAUTOCLAIM", {e[2], e[3], e[4]});
  for (int i : {2, 3, 4}) credit(b, "c2", e[i]);
  b.finalOp(balances(12100 + 900));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "effect-without-dedup");
  CHECK(v.pattern->explanation == "c1 committed the effect of event 3 (COMMIT#3) and was killed at after:COMMIT#3 "
                                  "before acknowledging entry 1-2; the redelivery to c2 (XAUTOCLAIM#1) applied it "
                                  "again: nothing recorded that the event was processed");
  CHECK_THAT(v.pattern->fix, Contains("ON CONFLICT DO NOTHING"));
  CHECK(v.pattern->fix == "record the event in the effect's transaction: BEGIN; INSERT INTO "
                          "processed_events(event_id) VALUES ($1) ON CONFLICT DO NOTHING; apply the effect only when "
                          "that inserted a row; COMMIT; then XACK");
}

TEST_CASE("effect-without-dedup on Kafka: COMMIT, a kill before COMMIT_OFFSET, applied again", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"after:COMMIT#3"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2, 3, 4, 5});
  b.spawn("c1");
  b.brokerStep("c1", "kafka", "FETCH", e);
  // Each offset commit names every record below its position.
  std::vector<std::string> passed;
  for (int i : {0, 1}) {
    credit(b, "c1", e[i], false);
    passed.push_back(e[i]);
    b.brokerStep("c1", "kafka", "COMMIT_OFFSET", {}, passed);
  }
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE");
  b.step("c1", "pg", "COMMIT", "COMMIT", "killed-after");
  const int64_t kill = b.kill("c1", "after:COMMIT#3");
  b.spawn("c2");
  const int64_t again = b.brokerStep("c2", "kafka", "FETCH", {e[2], e[3], e[4]});
  for (int i : {2, 3, 4}) {
    credit(b, "c2", e[i], false);
    passed.push_back(e[i]);
    b.brokerStep("c2", "kafka", "COMMIT_OFFSET", {}, passed);
  }
  b.finalOp(balances(12100 + 900));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "effect-without-dedup");
  CHECK(v.pattern->explanation == "c1 committed the effect of event 3 (COMMIT#3) and was killed at after:COMMIT#3 "
                                  "before acknowledging entry 1-2; the redelivery to c2 (FETCH#2) applied it "
                                  "again: nothing recorded that the event was processed");
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(kill));
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(again));
  CHECK_THAT(v.pattern->fix, Contains("COMMIT; then commit its offset"));
  CHECK_THAT(v.pattern->fix, Contains("offset"));
  CHECK_THAT(v.pattern->fix, !Contains("XACK"));
}

TEST_CASE("effect-without-dedup names the entry the kill cut, not a retry later in its batch", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"after:COMMIT#3"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2, 3, 4, 5, 2});
  b.spawn("c1");
  b.brokerStep("c1", "kafka", "FETCH", e);
  std::vector<std::string> passed;
  for (int i : {0, 1}) {
    credit(b, "c1", e[i], false);
    passed.push_back(e[i]);
    b.brokerStep("c1", "kafka", "COMMIT_OFFSET", {}, passed);
  }
  // Event 3's effect; event 2's retry (entry 1-5) waits later in the batch.
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE");
  b.step("c1", "pg", "COMMIT", "COMMIT", "killed-after");
  b.kill("c1", "after:COMMIT#3");
  b.spawn("c2");
  b.brokerStep("c2", "kafka", "FETCH", {e[2], e[3], e[4], e[5]});
  for (int i : {2, 3, 4, 5}) {
    credit(b, "c2", e[i], false);
    passed.push_back(e[i]);
    b.brokerStep("c2", "kafka", "COMMIT_OFFSET", {}, passed);
  }
  b.finalOp(balances(12100 + 900 + 300));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "effect-without-dedup");
  CHECK(v.pattern->explanation == "c1 committed the effect of event 3 (COMMIT#3) and was killed at after:COMMIT#3 "
                                  "before acknowledging entry 1-2; the redelivery to c2 (FETCH#2) applied it "
                                  "again: nothing recorded that the event was processed");
}

TEST_CASE("effect-without-dedup: the producer's retry applied again, no dedup step in the run", "[patterns]") {
  Scenario s = builtin("wallet");
  const Violation& v = ofKind(failing(s, simpleWalletRun(), "invariant:balance"), "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "effect-without-dedup");
  CHECK(v.pattern->explanation == "event 2 came as 2 entries (1-1 and 1-5) and c1 applied each (UPDATE#2 and "
                                  "UPDATE#6): no step of the run records that an event was processed");
}

namespace {

/// Event 1 sent once; the broker forgets its deliveries after c1 applied it, hands it over again and c1
/// applies it again. With `marked`, each application starts with an INSERT … ON CONFLICT DO NOTHING.
std::vector<Op> handedTwiceRun(const Scenario& s, bool marked) {
  HistoryBuilder b(s, {"forget:after:XACK#1"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1});
  b.spawn("c1");
  for (const char* verb : {"XREADGROUP", "XREADGROUP"}) {
    b.read("c1", verb, e);
    if (marked)
      b.sql("c1", "INSERT", "INSERT INTO handled(id) VALUES ($1) ON CONFLICT DO NOTHING", {"handled"}, "INSERT 0 1");
    credit(b, "c1", e[0]);
  }
  b.finalOp(balances(200));
  return b.ops();
}

} // namespace

TEST_CASE("effect-without-dedup: one entry handed over twice, applied after each, no dedup step", "[patterns]") {
  Scenario s = builtin("wallet");
  const Violation& v = ofKind(failing(s, handedTwiceRun(s, false), "invariant:balance"), "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "effect-without-dedup");
  CHECK(v.pattern->explanation == "entry 1-0 of event 1 was handed over 2 times (XREADGROUP#1 to c1 and XREADGROUP#2 "
                                  "to c1) and applied after each: no step of the run records that an event was "
                                  "processed");
  // With a dedup step in the run, the duplicate comes from something the steps do not show: nothing named.
  CHECK_FALSE(ofKind(failing(s, handedTwiceRun(s, true), "invariant:balance"), "duplicate").pattern);
}

namespace {

/// Event 2 sent twice (entries 1-1 and 1-5), each entry marked with SET seen:<mark> NX, both credited.
std::vector<Op> markedTwiceRun(const Scenario& s, bool byEntry) {
  HistoryBuilder b(s);
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2, 3, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  const int events[] = {1, 2, 3, 2};
  for (size_t i = 0; i < e.size(); ++i) {
    b.step("c1", "valkey", "SET", fmt::format("SET seen:{} 1 NX", byEntry ? e[i] : b.eventId(events[i])));
    credit(b, "c1", e[i]);
  }
  b.finalOp(balances(100 + 2 * 300 + 900));
  return b.ops();
}

} // namespace

namespace {

/// Event 2 sent twice (entries 1-1 and 1-3); c1 applies each entry with one INSERT (`insert`) and COMMIT.
std::vector<Op> insertedTwiceRun(const Scenario& s, const std::string& insert) {
  HistoryBuilder b(s);
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2, 3, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  for (const auto& entry : e) {
    b.step("c1", "pg", "BEGIN");
    b.sql("c1", "INSERT", insert, {"ledger"}, "INSERT 0 1");
    b.step("c1", "pg", "COMMIT");
    b.ack("c1", {entry});
  }
  b.finalOp(balances(100 + 2 * 300 + 900));
  return b.ops();
}

} // namespace

TEST_CASE("effect-without-dedup: the effect an INSERT into a ledger, which is no dedup mark", "[patterns]") {
  Scenario s = builtin("wallet");
  const Violation& v = ofKind(
      failing(s, insertedTwiceRun(s, "INSERT INTO ledger(wallet, amount) VALUES ($1, $2)"), "invariant:balance"),
      "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "effect-without-dedup");
  CHECK(v.pattern->explanation == "event 2 came as 2 entries (1-1 and 1-3) and c1 applied each (INSERT#2 and "
                                  "INSERT#4): no step of the run records that an event was processed");
  // The same INSERT with ON CONFLICT DO NOTHING is a mark: the run did record events, so this is not it.
  const Violation& marked = ofKind(
      failing(s, insertedTwiceRun(s, "INSERT INTO ledger(wallet, amount) VALUES ($1, $2) ON CONFLICT DO NOTHING"),
              "invariant:balance"),
      "duplicate");
  CHECK(idOf(marked) != "effect-without-dedup");
}

TEST_CASE("dedup-on-broker-id: the mark keyed by the entry id, one event applied twice", "[patterns]") {
  Scenario s = builtin("wallet");
  const Violation& v = ofKind(failing(s, markedTwiceRun(s, true), "invariant:balance"), "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "dedup-on-broker-id");
  CHECK(v.pattern->explanation == "event 2 came as entries 1-1 and 1-3; the dedup mark is keyed by the entry id "
                                  "(SET#2 for 1-1 and SET#4 for 1-3), so both were applied");
}

TEST_CASE("a duplicate with marks keyed by the event id: neither broker id nor missing dedup", "[patterns]") {
  // The marks are right, yet the balance shows event 2 twice (something else applied it): no pattern fits.
  Scenario s = builtin("wallet");
  const Violation& v = ofKind(failing(s, markedTwiceRun(s, false), "invariant:balance"), "duplicate");
  CHECK_FALSE(v.pattern);
}

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

TEST_CASE("a passing run is never classified", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s);
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  credit(b, "c1", e[0]);
  b.finalOp(balances(100));
  auto rs = checkAll(s, b.ops());
  REQUIRE(merge(rs) == Verdict::Pass);
  // A violation planted in a result that does not fail the run: left without a pattern.
  auto ops = simpleWalletRun();
  auto planted = checkAll(s, ops);
  for (auto& r : planted) {
    r.verdict = r.verdict == Verdict::Fail ? Verdict::Unknown : r.verdict;
    for (auto& v : r.violations) v.pattern.reset();
  }
  classifyViolations(s, ops, planted);
  for (const auto& r : planted)
    for (const auto& v : r.violations) CHECK_FALSE(v.pattern);
}
