// The anti-pattern classifiers (checkers/patterns/) on histories written by hand: each row of the table in
// docs/report.md named from its steps, and the look-alikes where nothing may be named. Here the wallet on a
// Valkey stream: an acknowledgement before the effect, an effect without dedup, a mark keyed by the broker's
// id, and a passing run. Elsewhere: dedup marks outside the effect's transaction (patterns_dedup_test.cc),
// races and reruns (patterns_races_test.cc), Kafka (patterns_kafka_test.cc), a pause
// (patterns_pause_test.cc) and the HTTP workload (patterns_http_test.cc).
#include "patterns_util.h"

using namespace idem;
using namespace idem::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

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

TEST_CASE("ack-before-effect: XACK, then a restart of PostgreSQL fails the effect's transaction", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"restart:before:COMMIT#1:pg"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  b.ack("c1", {e[0]});
  b.sql("c1", "BEGIN", "BEGIN", {}, "BEGIN");
  b.sql("c1", "UPDATE", "UPDATE wallets SET balance = balance + $1", {"wallets"}, "UPDATE 1");
  b.fault("c1", "restart:before:COMMIT#1:pg");
  b.sql("c1", "COMMIT", "COMMIT", {}, "terminating connection due to administrator command", true);
  b.ack("c1", {e[1]});
  credit(b, "c1", e[1], false);
  b.finalOp(balances(300));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "ack-before-effect");
  CHECK(v.pattern->explanation == "c1 acknowledged entry 1-0 (XACK#1) before committing its effect; then PostgreSQL "
                                  "restarted at restart:before:COMMIT#1:pg and its transaction failed; acknowledged, "
                                  "the entry was never handed over again: event 1 lost");
}

TEST_CASE("ack-before-effect: an XACK pipelined in MULTI … EXEC behind the step a drop cut, which the server ran",
          "[patterns]") {
  // c1 sends MULTI, XACK, EXEC in one write before its credit; its connection is dropped after MULTI's
  // reply, when the XACK and EXEC had reached the server (EXEC forwarded, its reply lost). Recorded after
  // the drop, the acknowledgement is still the one the drop left the event lost by.
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"drop:after:MULTI#1"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  b.step("c1", "valkey", "MULTI", "MULTI", "dropped-after");
  const int64_t drop = b.fault("c1", "drop:after:MULTI#1");
  b.step("c1", "valkey", "XACK", "XACK s g 1-0", "forwarded");
  const int64_t exec = b.brokerStep("c1", "valkey", "EXEC", {}, {e[0]}, "forwarded");
  b.exit("c1", 1, std::nullopt, "self");
  b.spawn("c2");
  b.read("c2", "XAUTOCLAIM", {e[1]});
  b.ack("c2", {e[1]});
  credit(b, "c2", e[1], false);
  b.finalOp(balances(300));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "ack-before-effect");
  CHECK(v.pattern->explanation == "c1 acknowledged entry 1-0 (EXEC#1) before committing its effect; then c1's "
                                  "connection dropped at drop:after:MULTI#1 before its effect began; acknowledged, "
                                  "the entry was never handed over again: event 1 lost");
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(exec));
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(drop));
}

TEST_CASE("ack-before-effect: a batch acknowledged first, then worked one by one, a kill in the second", "[patterns]") {
  // ioredis with auto-pipelining: the batch's XACKs go out in one write before any credit. Event 1's credit
  // commits, event 2's is killed: nothing took effect between event 2's delivery and its XACK.
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"before:COMMIT#2"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  b.ack("c1", {e[0]});
  const int64_t ack2 = b.ack("c1", {e[1]});
  credit(b, "c1", e[0], false);
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
  b.step("c1", "pg", "COMMIT", "COMMIT", "killed-before");
  b.kill("c1", "before:COMMIT#2");
  b.finalOp(balances(100));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
  CHECK(v.events == std::vector<int>{2});
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "ack-before-effect");
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(ack2));
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

TEST_CASE("a COMMIT before a kill on one of two connections at work at once is not told as an entry's effect",
          "[patterns]") {
  // c1 works on its batch on a pool's two connections at once: the transaction committed before the kill
  // may be any entry's, so no kill story names an event for it.
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"after:COMMIT#1"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2, 3});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  b.pgConn = 2;
  b.step("c1", "pg", "BEGIN");
  b.pgConn = 3;
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE");
  b.step("c1", "pg", "COMMIT", "COMMIT", "killed-after");
  b.kill("c1", "after:COMMIT#1");
  b.spawn("c2");
  b.pgConn = 4;
  b.read("c2", "XAUTOCLAIM", e);
  for (int i : {0, 1, 2}) credit(b, "c2", e[i]);
  b.finalOp(balances(100 + 300 + 900 + 100));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "duplicate");
  CHECK((!v.pattern || v.pattern->explanation.find("committed the effect of event") == std::string::npos));
}

TEST_CASE("effect-without-dedup: the producer's retry applied again, no dedup step in the run", "[patterns]") {
  Scenario s = builtin("wallet");
  const Violation& v = ofKind(failing(s, simpleWalletRun(), "invariant:balance"), "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "effect-without-dedup");
  CHECK(v.pattern->explanation == "event 2 came as 2 entries (1-1 and 1-5) and c1 applied each (UPDATE#2 and "
                                  "UPDATE#6): no step of the run records that an event was processed");
}

TEST_CASE("effect-without-dedup: deliveries worked on at once, no write told as an entry's, still named", "[patterns]") {
  // A prefetch handed to a pool: every delivery comes before the first write, acknowledged as each finishes.
  Scenario s = builtin("wallet");
  HistoryBuilder b(s);
  b.initial(balances(0));
  auto e = sendWallet(b, {5000, 5000, 5000, 5000, 5000}, {1, 2, 3, 4, 5, 2});
  b.spawn("c1");
  for (const auto& entry : e) b.read("c1", "XREADGROUP", {entry});
  for (const auto& entry : e) applySimply(b, "c1", entry, 5000);
  b.finalOp(balances(30000));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "effect-without-dedup");
  CHECK(v.pattern->explanation == "event 2 came as 2 entries (1-1 and 1-5), each delivered (XREADGROUP#2 to c1 and "
                                  "XREADGROUP#6 to c1) to a consumer that went on to commit writes, and was applied "
                                  "more than once: no step of the run records that an event was processed");
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

TEST_CASE("effect-without-dedup: a mark a ROLLBACK TO its savepoint always undid records nothing", "[patterns]") {
  // An ORM's nested transaction around the mark, rolled back each time: the mark never took effect.
  Scenario s = builtin("wallet");
  HistoryBuilder b(s);
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2, 3, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  for (const auto& entry : e) {
    b.sql("c1", "BEGIN", "BEGIN", {}, "BEGIN");
    b.sql("c1", "SAVEPOINT", "SAVEPOINT trx2", {}, "SAVEPOINT");
    b.sql("c1", "INSERT", "INSERT INTO processed_events(event_id) VALUES ($1)", {"processed_events"}, "INSERT 0 1");
    b.sql("c1", "ROLLBACK", "ROLLBACK TO SAVEPOINT trx2", {}, "ROLLBACK");
    b.sql("c1", "UPDATE", "UPDATE wallets SET balance = balance + $1", {"wallets"}, "UPDATE 1");
    b.sql("c1", "COMMIT", "COMMIT", {}, "COMMIT");
    b.ack("c1", {entry});
  }
  b.finalOp(balances(100 + 2 * 300 + 900));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "effect-without-dedup");
}

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
