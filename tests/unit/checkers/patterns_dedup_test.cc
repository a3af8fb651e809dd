// The dedup-outside-transaction classifier (checkers/patterns/) on histories written by hand: a dedup mark
// (SET NX in Valkey, an INSERT committed on its own) apart from the effect's transaction, how a mark is told
// by its statement's shape, and the lost events no classifier may explain.
#include "patterns_util.h"

using namespace idem;
using namespace idem::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

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

TEST_CASE("where a write took effect: savepoints, ROLLBACK TO and a COMMIT answered ROLLBACK", "[patterns]") {
  // The statements of ORMs that nest transactions (Django's atomic, SQLAlchemy's begin_nested, Knex's
  // nested transaction): a ROLLBACK TO SAVEPOINT undoes the writes after its savepoint and ends nothing.
  Scenario s = builtin("wallet");
  HistoryBuilder b(s);
  b.initial(balances(0));
  sendWallet(b, kAmounts, {1});
  b.spawn("c1");
  auto sql = [&](const std::string& verb, const std::string& text, const std::string& summary, bool error = false) {
    return b.sql("c1", verb, text, {}, summary, error);
  };
  sql("BEGIN", "BEGIN", "BEGIN");
  const int64_t credit = sql("UPDATE", "UPDATE wallets SET balance = balance + $1", "UPDATE 1");
  sql("SAVEPOINT", "SAVEPOINT \"s1_x\"", "SAVEPOINT");
  const int64_t undone = sql("INSERT", "INSERT INTO processed(event_id) VALUES ($1)", "INSERT 0 1");
  sql("ROLLBACK", "ROLLBACK TO SAVEPOINT \"s1_x\"", "ROLLBACK");
  sql("SAVEPOINT", "savepoint s2", "SAVEPOINT");
  const int64_t released = sql("INSERT", "INSERT INTO processed(event_id) VALUES ($1)", "INSERT 0 1");
  sql("RELEASE", "RELEASE SAVEPOINT s2", "RELEASE");
  const int64_t commit = sql("COMMIT", "COMMIT", "COMMIT");
  // A second transaction: a failed statement aborts it, and its COMMIT is answered ROLLBACK.
  sql("START", "START TRANSACTION", "START TRANSACTION");
  const int64_t aborted = sql("UPDATE", "UPDATE wallets SET balance = balance + $1", "UPDATE 1");
  sql("INSERT", "INSERT INTO processed(event_id) VALUES ($1)", "duplicate key value violates unique constraint", true);
  sql("COMMIT", "COMMIT", "ROLLBACK");
  // A third: ROLLBACK TO a savepoint set after the write leaves the write in its transaction.
  sql("BEGIN", "BEGIN", "BEGIN");
  const int64_t kept = sql("UPDATE", "UPDATE wallets SET balance = balance + $1", "UPDATE 1");
  sql("SAVEPOINT", "SAVEPOINT later", "SAVEPOINT");
  sql("ROLLBACK", "ROLLBACK WORK TO later", "ROLLBACK");
  const int64_t lastCommit = sql("COMMIT", "COMMIT", "COMMIT");
  // A savepoint released before a ROLLBACK TO an older one merges into it: the older one's rollback undoes it.
  sql("BEGIN", "BEGIN", "BEGIN");
  sql("SAVEPOINT", "SAVEPOINT outer_sp", "SAVEPOINT");
  sql("SAVEPOINT", "SAVEPOINT inner_sp", "SAVEPOINT");
  const int64_t merged = sql("UPDATE", "UPDATE wallets SET balance = balance + $1", "UPDATE 1");
  sql("RELEASE", "RELEASE inner_sp", "RELEASE");
  sql("ROLLBACK", "ROLLBACK TO SAVEPOINT outer_sp", "ROLLBACK");
  sql("COMMIT", "COMMIT", "COMMIT");
  auto ops = b.ops();
  detail::HistoryView h(s, ops);
  using detail::patterns::commitOf;
  REQUIRE(commitOf(h, "c1", credit));
  CHECK(commitOf(h, "c1", credit)->op == commit); // the ROLLBACK TO ended no transaction
  CHECK_FALSE(commitOf(h, "c1", undone));
  REQUIRE(commitOf(h, "c1", released));
  CHECK(commitOf(h, "c1", released)->op == commit);
  CHECK_FALSE(commitOf(h, "c1", aborted));
  REQUIRE(commitOf(h, "c1", kept));
  CHECK(commitOf(h, "c1", kept)->op == lastCommit);
  CHECK_FALSE(commitOf(h, "c1", merged));
}
