// Why a pass can't be a coincidence, per invariant kind (docs/verdicts.md), and what a run that ended at a
// limit of the harness proves: each rule of the sound-verdicts contract as a test.
#include "check_util.h"

#include <filesystem>
#include <fstream>

using namespace idem;
using namespace idem::testing;
using nlohmann::json;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

Scenario fromFile(const char* rel) {
  return loadScenario((std::filesystem::path(IDEM_SOURCE_DIR) / rel).string(),
                      std::filesystem::path(IDEM_SOURCE_DIR) / "scenarios");
}

/// Wallet payments with these amounts along `stream`, all read by c1 and acknowledged.
HistoryBuilder wallet(const Scenario& s, const std::vector<int>& amounts, const std::vector<int>& stream) {
  HistoryBuilder b(s);
  b.initial(balances(0));
  auto entries = sendWallet(b, amounts, stream);
  b.spawn("c1");
  b.read("c1", "XREADGROUP", entries);
  for (const auto& e : entries) b.ack("c1", {e});
  return b;
}

} // namespace

TEST_CASE("sum-of-distinct: the expected value passes only when no other application counts give it", "[verdicts]") {
  Scenario s = builtin("wallet");
  SECTION("decodable amounts, a retry: valid") {
    auto b = wallet(s, {100, 300, 900}, {1, 2, 3, 2});
    b.finalOp(balances(1300));
    CHECK(merge(checkAll(s, b.ops())) == Verdict::Pass);
  }
  SECTION("equal amounts, each delivered once: valid (nothing could have been applied twice)") {
    auto b = wallet(s, {5000, 5000, 5000}, {1, 2, 3});
    b.finalOp(balances(15000));
    CHECK(merge(checkAll(s, b.ops())) == Verdict::Pass);
  }
  SECTION("equal amounts, a retry: unknown, naming the other explanation") {
    auto b = wallet(s, {5000, 5000, 5000}, {1, 2, 3, 2});
    b.finalOp(balances(15000));
    auto r = result(checkAll(s, b.ops()), "invariant:balance");
    CHECK(r.verdict == Verdict::Unknown);
    CHECK(r.error == "balance of w1 is 15000 as expected, but event 1 lost and event 2 applied twice gives the same "
                     "value: the amounts cannot tell (docs/verdicts.md)");
  }
  SECTION("a amount that is the sum of two others, one retried: unknown") {
    auto b = wallet(s, {100, 200, 300}, {1, 2, 3, 3});
    b.finalOp(balances(600));
    CHECK(result(checkAll(s, b.ops()), "invariant:balance").verdict == Verdict::Unknown);
  }
}

TEST_CASE("count-of-distinct: a count proves each once only when nothing could have been applied twice", "[verdicts]") {
  Scenario s = fromFile("tests/scenarios/shipping-count.json");
  HistoryBuilder b(s);
  b.initial({{"shipped", rows({{"1", "paid"}, {"2", "paid"}, {"3", "paid"}, {"4", "paid"}})},
             {"stock", rows({{"A", "10"}, {"B", "10"}})}});
  const char* sku[] = {"", "A", "A", "B"};
  std::vector<std::string> entries;
  SECTION("each order delivered once: valid") {
    for (int n : {1, 2, 3}) entries.push_back(b.send(n, {{"order", std::to_string(n)}, {"sku", sku[n]}}));
    b.spawn("c1");
    b.read("c1", "XREADGROUP", entries);
    for (const auto& e : entries) b.ack("c1", {e});
    b.finalOp({{"shipped", rows({{"1", "shipped"}, {"2", "shipped"}, {"3", "shipped"}, {"4", "paid"}})},
               {"stock", rows({{"A", "8"}, {"B", "9"}})}});
    CHECK(merge(checkAll(s, b.ops())) == Verdict::Pass);
  }
  SECTION("order 2 retried: the count 8 is also order 2 twice and order 1 never: unknown") {
    for (int n : {1, 2, 3, 2}) entries.push_back(b.send(n, {{"order", std::to_string(n)}, {"sku", sku[n]}}));
    b.spawn("c1");
    b.read("c1", "XREADGROUP", entries);
    for (const auto& e : entries) b.ack("c1", {e});
    b.finalOp({{"shipped", rows({{"1", "shipped"}, {"2", "shipped"}, {"3", "shipped"}, {"4", "paid"}})},
               {"stock", rows({{"A", "8"}, {"B", "9"}})}});
    auto r = result(checkAll(s, b.ops()), "invariant:stock");
    CHECK(r.verdict == Verdict::Unknown);
    CHECK(r.error == "stock of A is 8 as expected, but order 1 (event 1) lost and order 2 (event 2) applied twice gives "
                     "the same value: a count cannot tell (docs/verdicts.md)");
  }
}

TEST_CASE("final-value: the value proves an effect only if the row did not hold it before", "[verdicts]") {
  Scenario s = builtin("order-shipping");
  HistoryBuilder b(s);
  b.initial({{"shipped", rows({{"1", "shipped"}, {"2", "paid"}, {"3", "paid"}, {"4", "paid"}})},
             {"stock", rows({{"A", "1000"}, {"B", "1000"}})}});
  auto e = b.send(1, {{"order", "1"}, {"sku", "A"}, {"qty", "1"}});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", {e});
  b.ack("c1", {e});
  b.finalOp({{"shipped", rows({{"1", "shipped"}, {"2", "paid"}, {"3", "paid"}, {"4", "paid"}})},
             {"stock", rows({{"A", "999"}, {"B", "1000"}})}});
  auto r = result(checkAll(s, b.ops()), "invariant:shipped");
  CHECK(r.verdict == Verdict::Unknown);
  CHECK(r.error == "shipped of 1 is 'shipped' as expected, but it was already 'shipped' before any event: the row "
                   "cannot show that an event took effect");
}

TEST_CASE("latest-version: the final row proves the highest version won only if no older one looks the same",
          "[verdicts]") {
  // customer-city without the version among the compared columns: two versions with one city are alike.
  auto j = json::parse(std::ifstream(std::filesystem::path(IDEM_SOURCE_DIR) / "scenarios/customer-city.json"));
  j["invariants"][0]["columns"] = {"city"};
  j["invariants"][0]["observed"] = "SELECT id, city FROM customers";
  Scenario s = scenarioFromJson(j, "city-only.json");
  HistoryBuilder b(s);
  b.initial({{"latest-city", rows({{"c1", ""}, {"c2", ""}, {"c3", ""}})}});
  std::vector<std::string> entries;
  entries.push_back(b.send(1, {{"customer", "c1"}, {"city", "Abha"}, {"version", "1"}}));
  SECTION("two versions with the same city: unknown") {
    entries.push_back(b.send(2, {{"customer", "c1"}, {"city", "Abha"}, {"version", "2"}}));
    b.spawn("c1");
    b.read("c1", "XREADGROUP", entries);
    for (const auto& e : entries) b.ack("c1", {e});
    b.finalOp({{"latest-city", rows({{"c1", "Abha"}, {"c2", ""}, {"c3", ""}})}});
    auto r = result(checkAll(s, b.ops()), "invariant:latest-city");
    CHECK(r.verdict == Verdict::Unknown);
    CHECK(r.error == "c1 holds version 2 (event 2) as expected, but event 1 carries the same values: the row cannot "
                     "tell which one won");
  }
  SECTION("distinct cities: valid") {
    entries.push_back(b.send(2, {{"customer", "c1"}, {"city", "Dammam"}, {"version", "2"}}));
    b.spawn("c1");
    b.read("c1", "XREADGROUP", entries);
    for (const auto& e : entries) b.ack("c1", {e});
    b.finalOp({{"latest-city", rows({{"c1", "Dammam"}, {"c2", ""}, {"c3", ""}})}});
    CHECK(merge(checkAll(s, b.ops())) == Verdict::Pass);
  }
}

TEST_CASE("a run that ended at a limit proves only what more time can't undo", "[verdicts]") {
  Scenario s = builtin("wallet");
  SECTION("a payment missing: unknown, with the reason") {
    auto b = wallet(s, {100, 300, 900}, {1, 2, 3});
    b.finalOp(balances(400), json::array(), json::array(), "limit");
    auto rs = checkAll(s, b.ops());
    auto r = result(rs, "invariant:balance");
    CHECK(r.verdict == Verdict::Unknown);
    CHECK_THAT(r.error, StartsWith("balance of w1 is 400, expected 1300, but the run did not finish (deadline of 60 s "
                                   "reached with c1 silent for 58 s holding 1 entry; raise --deadline)"));
    CHECK(merge(rs) == Verdict::Unknown);
  }
  SECTION("a payment applied twice: a violation all the same") {
    auto b = wallet(s, {100, 300, 900}, {1, 2, 3, 2});
    b.finalOp(balances(1600), json::array(), json::array(), "limit");
    auto rs = checkAll(s, b.ops());
    auto r = result(rs, "invariant:balance");
    REQUIRE(r.verdict == Verdict::Fail);
    CHECK(r.violations.at(0).kind == "duplicate");
    CHECK(r.violations.at(0).events == std::vector<int>{2});
    CHECK(merge(rs) == Verdict::Fail);
  }
}

TEST_CASE("observation: a connection the proxies could not decode", "[verdicts]") {
  Scenario s = builtin("wallet");
  auto run = [&](std::vector<std::string> kills, const std::string& server) {
    HistoryBuilder b(s, std::move(kills));
    b.initial(balances(0));
    auto e = sendWallet(b, {100}, {1});
    b.spawn("c1");
    b.read("c1", "XREADGROUP", e);
    b.h.append("c1", ops::Opaque{server, 2, "client", 41, "not the PostgreSQL v3 protocol (first bytes: 7a7a7a7a)"});
    b.ack("c1", e);
    b.finalOp(balances(100));
    return result(checkAll(s, b.ops()), "observation");
  };
  SECTION("the broker's connection, whichever broker: deliveries unseen, unknown, with or without faults") {
    for (const char* broker : {"valkey", "nats", "rabbitmq", "kafka"}) {
      INFO(broker);
      auto r = run({}, broker);
      CHECK(r.verdict == Verdict::Unknown);
      CHECK_THAT(r.error, Contains("the deliveries and acknowledgements on it were not seen"));
    }
  }
  SECTION("the sink's connection without kill points: its calls are the sink's own record, valid") {
    CHECK(run({}, "sink").verdict == Verdict::Pass);
  }
  SECTION("PostgreSQL with a kill point planned: unknown") {
    auto r = run({"after:COMMIT#1"}, "pg");
    CHECK(r.verdict == Verdict::Unknown);
    CHECK(r.error == "c1's PostgreSQL connection 2 could not be decoded (client bytes from byte 41: not the "
                     "PostgreSQL v3 protocol (first bytes: 7a7a7a7a)): its steps were not counted, so a planned kill "
                     "point could have been on it");
  }
  SECTION("PostgreSQL without kill points: the final state is read directly, valid") {
    CHECK(run({}, "pg").verdict == Verdict::Pass);
  }
}
