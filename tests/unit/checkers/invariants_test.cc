// Each invariant kind, valid and with each kind of violation it can report.
#include "check_util.h"

#include <fstream>
#include <functional>

using namespace idem;
using namespace idem::testing;
using nlohmann::json;
using Catch::Matchers::StartsWith;
using Catch::Matchers::Contains;

namespace {

/// order-shipping as it was, with a count-of-distinct stock (tests/scenarios/shipping-count.json).
Scenario shippingCount() {
  return loadScenario((std::filesystem::path(IDEM_SOURCE_DIR) / "tests/scenarios/shipping-count.json").string(),
                      std::filesystem::path(IDEM_SOURCE_DIR) / "scenarios");
}

/// order-shipping's default schedule delivered in one read to c1, each entry acked.
HistoryBuilder shipping(const Scenario& s, std::vector<std::string>& entries) {
  HistoryBuilder b(s);
  b.initial({{"shipped", rows({{"1", "paid"}, {"2", "paid"}, {"3", "paid"}, {"4", "paid"}})},
             {"stock", rows({{"A", "10"}, {"B", "10"}})}});
  const char* sku[] = {"", "A", "A", "B"};
  for (int n : {1, 2, 3, 2}) entries.push_back(b.send(n, {{"order", std::to_string(n)}, {"sku", sku[n]}}));
  b.spawn("c1");
  b.read("c1", "XREADGROUP", entries);
  for (const auto& e : entries) b.ack("c1", {e});
  return b;
}

} // namespace

TEST_CASE("sum-of-distinct: a correct run with decodable amounts is valid", "[invariants]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s);
  b.initial(balances(0));
  auto entries = sendWallet(b, {100, 300, 900, 2700, 8100}, {1, 2, 3, 4, 5, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", entries);
  for (const auto& e : entries) b.ack("c1", {e});
  b.finalOp(balances(12100));
  auto rs = checkAll(s, b.ops());
  for (const auto& r : rs) {
    INFO(r.checker << ": " << r.error);
    CHECK(r.verdict == Verdict::Pass);
  }
  CHECK(merge(rs) == Verdict::Pass);
}

namespace {

/// The wallet on RabbitMQ: event 1 delivered and handed back three times (a nack with requeue while the
/// database is down), then applied once like every other event. Between each delivery and its nack c1 ran
/// `between` on PostgreSQL (nothing, a BEGIN, a write, …); `after` runs once every event was applied.
using Work = std::function<void(HistoryBuilder&)>;
/// `patch` may change the recorded ops before they are checked (each op's time is 1 ms times its index).
using Patch = std::function<void(std::vector<Op>&)>;
std::vector<CheckResult> givenBack(const Work& between, const Work& after = {}, const Patch& patch = {}) {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s);
  b.initial(balances(0));
  auto entries = sendWallet(b, {100, 300, 900, 2700, 8100}, {1, 2, 3, 4, 5, 2});
  b.spawn("c1");
  for (int i = 0; i < 3; ++i) {
    b.brokerStep("c1", "rabbitmq", "DELIVER", {entries[0]});
    between(b);
    b.giveBack("c1", "rabbitmq", "NACK", {entries[0]});
  }
  for (const auto& e : entries) {
    b.brokerStep("c1", "rabbitmq", "DELIVER", {e});
    b.brokerStep("c1", "rabbitmq", "ACK", {}, {e});
  }
  if (after) after(b);
  b.finalOp(balances(12100));
  auto ops = b.ops();
  for (auto& op : ops) op.time_us = op.index * 1000;
  if (patch) patch(ops);
  return checkAll(s, ops);
}

const std::string kMark = "INSERT INTO processed_messages(event_id) VALUES ($1)";
void begin(HistoryBuilder& b) { b.step("c1", "pg", "BEGIN"); }
void mark(HistoryBuilder& b) { b.sql("c1", "INSERT", kMark, {"processed_messages"}, "INSERT 0 1"); }

Verdict balanceOf(const std::vector<CheckResult>& rs) {
  const auto& r = result(rs, "invariant:balance");
  INFO(r.error);
  return r.verdict;
}

} // namespace

TEST_CASE("sum-of-distinct: deliveries handed back untouched are no applications the amounts must tell apart",
          "[invariants]") {
  // Four deliveries of event 1 (100) would allow "event 1 four times, event 2 (300) never": the same sum.
  CHECK(balanceOf(givenBack([](HistoryBuilder&) {})) == Verdict::Pass);
  CHECK(balanceOf(givenBack(begin)) == Verdict::Pass);
  // A write on the database between a delivery and its nack may have applied it: ambiguous again.
  const auto& worked = result(givenBack(mark), "invariant:balance");
  CHECK(worked.verdict == Verdict::Unknown);
  CHECK_THAT(worked.error, Contains("the amounts cannot tell"));
  // So does one step of several statements named by its BEGIN: it names a table.
  CHECK(balanceOf(givenBack([](HistoryBuilder& b) {
          b.sql("c1", "BEGIN", "BEGIN; " + kMark + "; COMMIT", {"processed_messages"}, "COMMIT");
        })) == Verdict::Unknown);
}

TEST_CASE("sum-of-distinct: entries a server's error answer handed back (a closed channel) are handed back too",
          "[invariants]") {
  // The server closes the channel each delivery came on (RabbitMQ's channel.close, answering a request or
  // of itself): an error step whose `returned` the broker requeued.
  const auto closed = [](std::vector<Op>& ops) {
    for (auto& op : ops)
      if (auto* st = std::get_if<ops::Step>(&op.record); st && st->verb == "NACK") {
        st->verb = "CHANNEL_CLOSE";
        st->error = true;
      }
  };
  CHECK(balanceOf(givenBack([](HistoryBuilder&) {}, {}, closed)) == Verdict::Pass);
  CHECK(balanceOf(givenBack(mark, {}, closed)) == Verdict::Unknown); // work on the database in between
}

TEST_CASE("sum-of-distinct: a write in a transaction that never committed applied nothing, whatever ended it",
          "[invariants]") {
  // Rolled back (the consumer's error path), its COMMIT answered ROLLBACK (the transaction had failed), or
  // no COMMIT ever sent on that connection (the database restarted under it; the consumer went on elsewhere).
  CHECK(balanceOf(givenBack([](HistoryBuilder& b) {
          begin(b);
          mark(b);
          b.step("c1", "pg", "ROLLBACK");
        })) == Verdict::Pass);
  CHECK(balanceOf(givenBack([](HistoryBuilder& b) {
          begin(b);
          mark(b);
          b.sql("c1", "UPDATE", "UPDATE balance SET amount = amount + $1 WHERE id = $2", {"balance"},
                "terminating connection due to administrator command", true);
          b.sql("c1", "COMMIT", "COMMIT", {}, "ROLLBACK");
        })) == Verdict::Pass);
  CHECK(balanceOf(givenBack([](HistoryBuilder& b) {
          begin(b);
          mark(b);
          ++b.pgConn; // its connection is gone; the next delivery's work is on a new one
        })) == Verdict::Pass);
  // Doubt stays unknown: a COMMIT sent after the nack on that connection (a BEGIN there before it is inside
  // the open transaction), a COMMIT whose answer never came,
  // a ROLLBACK only to a savepoint, a write with no BEGIN before it (autocommit).
  CHECK(balanceOf(givenBack(
            [](HistoryBuilder& b) {
              begin(b);
              mark(b);
            },
            [](HistoryBuilder& b) { b.sql("c1", "COMMIT", "COMMIT", {}, "COMMIT"); })) == Verdict::Unknown);
  CHECK(balanceOf(givenBack([](HistoryBuilder& b) {
          begin(b);
          mark(b);
          b.step("c1", "pg", "COMMIT", "", "killed-after");
        })) == Verdict::Unknown);
  CHECK(balanceOf(givenBack([](HistoryBuilder& b) {
          begin(b);
          b.step("c1", "pg", "SAVEPOINT", "SAVEPOINT s1");
          mark(b);
          b.step("c1", "pg", "ROLLBACK", "ROLLBACK TO SAVEPOINT s1");
        })) == Verdict::Unknown);
  CHECK(balanceOf(givenBack([](HistoryBuilder& b) {
          mark(b);
          b.step("c1", "pg", "ROLLBACK");
        })) == Verdict::Unknown);
}

TEST_CASE("sum-of-distinct: a delivery's work is what its process sent between the delivery and the return",
          "[invariants]") {
  // c1's COMMIT of an earlier transaction, sent before each delivery, its reply held (a restart after it)
  // and recorded inside the window: not this delivery's work.
  const Work commit = [](HistoryBuilder& b) { b.sql("c1", "COMMIT", "COMMIT", {}, "COMMIT"); };
  const auto sentAt = [](int64_t offsetMs) {
    return [offsetMs](std::vector<Op>& ops) {
      for (auto& op : ops)
        if (auto* s = std::get_if<ops::Step>(&op.record); s && s->verb == "COMMIT")
          s->tReqUs = op.time_us + offsetMs * 1000;
    };
  };
  CHECK(balanceOf(givenBack(commit, {}, sentAt(-5))) == Verdict::Pass);
  // Sent inside the window: it may have been this delivery's, wherever its reply was recorded.
  CHECK(balanceOf(givenBack(commit, {}, sentAt(0))) == Verdict::Unknown);
  // A write sent before the nack whose reply came after it: recorded outside the window, still its work.
  CHECK(balanceOf(givenBack([](HistoryBuilder&) {},
                            [](HistoryBuilder& b) {
                              for (int i = 0; i < 3; ++i) mark(b);
                            },
                            [](std::vector<Op>& ops) {
                              std::vector<int64_t> nacks;
                              for (const auto& op : ops)
                                if (const auto* s = op.as<ops::Step>(); s && s->verb == "NACK") nacks.push_back(op.time_us);
                              int n = 0;
                              for (auto& op : ops)
                                if (auto* s = std::get_if<ops::Step>(&op.record); s && s->verb == "INSERT")
                                  s->tReqUs = nacks.at(static_cast<size_t>(n++)) - 500;
                            })) == Verdict::Unknown);
}

TEST_CASE("sum-of-distinct: a key without events must keep its initial value (phantom)", "[invariants]") {
  Scenario s = builtin("wallet");
  auto ops = simpleWalletRun();
  finalOf(ops).observed = observedOf(balances(25000, 700));
  const auto r = result(checkAll(s, ops), "invariant:balance");
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations[0].kind == "phantom");
  CHECK(r.violations[0].key == "w2");
  CHECK(r.violations[0].message == "balance of w2 is 700, expected its initial 0: no event was sent for w2");
}

TEST_CASE("sum-of-distinct: a row that appears from nowhere, or a missing row", "[invariants]") {
  Scenario s = builtin("wallet");
  auto ops = simpleWalletRun();
  auto obs = balances(25000);
  obs["balance"].push_back({"w9", "1"});
  obs["balance"].erase(0); // w1's row is gone
  finalOf(ops).observed = observedOf(obs);
  const auto r = result(checkAll(s, ops), "invariant:balance");
  REQUIRE(r.violations.size() == 2);
  CHECK(r.violations[0].key == "w1");
  CHECK(r.violations[0].kind == "lost");
  CHECK(r.violations[0].message == "balance of w1 has no row; expected 25000");
  CHECK(r.violations[0].candidates == std::vector<int>{1, 2, 3, 4, 5});
  CHECK(r.violations[1].key == "w9");
  CHECK(r.violations[1].kind == "phantom");
}

TEST_CASE("sum-of-distinct: a NULL value on one key is unknown there, invalid elsewhere wins", "[invariants]") {
  Scenario s = builtin("wallet");
  auto ops = simpleWalletRun(); // w1 is 30000: duplicate
  auto& rows = finalOf(ops).observed["balance"];
  rows[1][1] = std::nullopt;
  const auto r = result(checkAll(s, ops), "invariant:balance");
  CHECK(r.verdict == Verdict::Fail);
  CHECK_THAT(r.error, Contains("key w2: the final value of 'w2' is NULL"));
  rows[0][1] = "25000";
  CHECK(result(checkAll(s, ops), "invariant:balance").verdict == Verdict::Unknown);
}

TEST_CASE("count-of-distinct with sign -1: an order shipped twice takes stock twice", "[invariants]") {
  Scenario s = shippingCount();
  std::vector<std::string> entries;
  HistoryBuilder b = shipping(s, entries);
  b.finalOp({{"shipped", rows({{"1", "shipped"}, {"2", "shipped"}, {"3", "shipped"}, {"4", "paid"}})},
             {"stock", rows({{"A", "7"}, {"B", "9"}})}});
  auto rs = checkAll(s, b.ops());
  CHECK(result(rs, "invariant:shipped").verdict == Verdict::Pass);
  const auto& r = result(rs, "invariant:stock");
  REQUIRE(r.violations.size() == 1);
  const auto& v = r.violations[0];
  CHECK(v.kind == "duplicate");
  CHECK(v.key == "A");
  CHECK(v.events == std::vector<int>{2});
  CHECK(v.expected == 8);
  CHECK(v.observed == 7);
  CHECK(v.message == "order 2 (event 2) applied twice: sent twice by the producer (entries 1-1 and 1-3), delivered to "
                     "c1 both times (XREADGROUP#1); stock of A is 7, expected 8");
}

TEST_CASE("count-of-distinct: stock not taken is lost, counts do not tell which order", "[invariants]") {
  Scenario s = shippingCount();
  std::vector<std::string> entries;
  HistoryBuilder b = shipping(s, entries);
  b.finalOp({{"shipped", rows({{"1", "shipped"}, {"2", "shipped"}, {"3", "shipped"}, {"4", "paid"}})},
             {"stock", rows({{"A", "9"}, {"B", "9"}})}});
  const auto r = result(checkAll(s, b.ops()), "invariant:stock");
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations[0].kind == "lost");
  CHECK(r.violations[0].candidates == std::vector<int>{1, 2});
  CHECK(r.violations[0].message == "2 explanations: order 1 (event 1) lost; or order 2 (event 2) lost; a count cannot "
                                   "tell; stock of A is 9, expected 8");
}

TEST_CASE("final-value: an order with an event that is not shipped is lost, one without that is shipped is a phantom",
          "[invariants]") {
  Scenario s = shippingCount();
  std::vector<std::string> entries;
  HistoryBuilder b = shipping(s, entries);
  b.finalOp({{"shipped", rows({{"1", "shipped"}, {"2", "shipped"}, {"3", "paid"}, {"4", "shipped"}})},
             {"stock", rows({{"A", "8"}, {"B", "9"}})}});
  const auto r = result(checkAll(s, b.ops()), "invariant:shipped");
  REQUIRE(r.violations.size() == 2);
  CHECK(r.violations[0].kind == "lost");
  CHECK(r.violations[0].key == "3");
  CHECK(r.violations[0].events == std::vector<int>{3});
  CHECK(r.violations[0].message == "event 3 lost: delivered to c1 (XREADGROUP#1) and acknowledged by c1 without "
                                   "effect; shipped of 3 is 'paid', expected 'shipped'");
  CHECK(r.violations[1].kind == "phantom");
  CHECK(r.violations[1].key == "4");
}

TEST_CASE("latest-version: the highest version must win whatever the delivery order", "[invariants]") {
  Scenario s = builtin("customer-city");
  HistoryBuilder b(s);
  b.initial({{"latest-city", rows({{"c1", "", "0"}, {"c2", "", "0"}, {"c3", "", "0"}})}});
  const char* city[] = {"", "Riyadh", "Jeddah", "Dammam"};
  std::vector<std::string> e;
  for (int n : {2, 3, 1})
    e.push_back(b.send(n, {{"customer", "c1"}, {"city", city[n]}, {"version", std::to_string(n)}}));
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  b.ack("c1", e);
  e.push_back(b.send(1, {{"customer", "c1"}, {"city", "Riyadh"}, {"version", "1"}}, 2));
  b.read("c1", "XREADGROUP", {e[3]});
  b.ack("c1", {e[3]});
  auto ops = b.ops();

  SECTION("version 3 held: valid") {
    b.finalOp({{"latest-city", rows({{"c1", "Dammam", "3"}, {"c2", "", "0"}, {"c3", "", "0"}})}});
    CHECK(result(checkAll(s, b.ops()), "invariant:latest-city").verdict == Verdict::Pass);
  }
  SECTION("version 1 held: stale-version naming both versions") {
    b.finalOp({{"latest-city", rows({{"c1", "Riyadh", "1"}, {"c2", "", "0"}, {"c3", "", "0"}})}});
    const auto r = result(checkAll(s, b.ops()), "invariant:latest-city");
    REQUIRE(r.violations.size() == 1);
    const auto& v = r.violations[0];
    CHECK(v.kind == "stale-version");
    CHECK(v.key == "c1");
    CHECK(v.events == std::vector<int>{1, 3});
    CHECK(v.expected == json{{"city", "Dammam"}, {"version", "3"}});
    CHECK(v.observed == json{{"city", "Riyadh"}, {"version", "1"}});
    CHECK(v.message == "c1 holds version 1 (event 1), expected version 3 (event 3): event 1 sent twice by the producer "
                       "(entries 1-2 and 1-3), delivered to c1 both times (XREADGROUP#1, XREADGROUP#2); event 3 "
                       "delivered to c1 (XREADGROUP#1)");
  }
  SECTION("the initial row held: every event lost") {
    b.finalOp({{"latest-city", rows({{"c1", "", "0"}, {"c2", "", "0"}, {"c3", "", "0"}})}});
    const auto r = result(checkAll(s, b.ops()), "invariant:latest-city");
    REQUIRE(r.violations.size() == 1);
    CHECK(r.violations[0].kind == "lost");
    CHECK(r.violations[0].events == std::vector<int>{1, 2, 3});
    CHECK_THAT(r.violations[0].message, StartsWith("events 1, 2 and 3 lost: event 1 sent twice"));
  }
  SECTION("a row no event carries; a key without events changed") {
    b.finalOp({{"latest-city", rows({{"c1", "Abha", "3"}, {"c2", "Abha", "0"}, {"c3", "", "0"}})}});
    const auto r = result(checkAll(s, b.ops()), "invariant:latest-city");
    REQUIRE(r.violations.size() == 2);
    CHECK(r.violations[0].kind == "phantom");
    CHECK(r.violations[0].candidates == std::vector<int>{1, 2, 3});
    CHECK(r.violations[1].kind == "phantom");
    CHECK(r.violations[1].key == "c2");
  }
}

TEST_CASE("one-row-per-event: extra rows are duplicates, missing ones lost, unknown ids phantoms", "[invariants]") {
  std::ifstream in(std::string(IDEM_SOURCE_DIR) + "/scenarios/wallet.json");
  json j = json::parse(in);
  j["invariants"].push_back({{"name", "ledger"}, {"kind", "one-row-per-event"}, {"observed", "SELECT event_id FROM ledger"}});
  Scenario s = scenarioFromJson(j, "ledger.json");
  HistoryBuilder b(s);
  b.initial({{"balance", balances(0)["balance"]}, {"ledger", json::array()}});
  auto entries = sendWallet(b, {100, 200, 300}, {1, 2, 3, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", entries);
  b.ack("c1", entries);
  json ledger = rows({{b.eventId(1)}, {b.eventId(2)}, {b.eventId(2)}, {"stranger"}});
  b.finalOp({{"balance", balances(600)["balance"]}, {"ledger", ledger}});
  const auto r = result(checkAll(s, b.ops()), "invariant:ledger");
  REQUIRE(r.violations.size() == 3);
  std::map<std::string, const Violation*> byKind;
  for (const auto& v : r.violations) byKind[v.kind] = &v;
  REQUIRE(byKind.count("duplicate"));
  CHECK(byKind["duplicate"]->events == std::vector<int>{2});
  CHECK_THAT(byKind["duplicate"]->message, StartsWith("event 2 applied twice: sent twice by the producer"));
  REQUIRE(byKind.count("lost"));
  CHECK(byKind["lost"]->events == std::vector<int>{3});
  CHECK_THAT(byKind["lost"]->message, StartsWith("event 3 lost: delivered to c1 (XREADGROUP#1) and acknowledged by c1 without effect"));
  REQUIRE(byKind.count("phantom"));
  CHECK(byKind["phantom"]->message == "ledger has 1 row with event_id 'stranger', which no event sent carries");
}
