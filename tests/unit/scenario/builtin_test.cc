#include "scenario/scenario.h"
#include "test_util.h" // tests/

#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <sstream>
#include <set>

using idem::testing::ScratchDir;
using idem::testing::usageError;
using Catch::Matchers::Contains;

namespace {

const std::filesystem::path kDir = std::filesystem::path(IDEM_SOURCE_DIR) / "scenarios";

std::vector<std::string> streamOf(const idem::Schedule& s) {
  std::vector<std::string> out;
  for (const auto& e : s.stream) out.push_back(std::to_string(e.event) + "/" + std::to_string(e.phase));
  return out;
}

} // namespace

TEST_CASE("wallet: five payments of 5000 to w1, then payment 2 again", "[scenario][builtin]") {
  idem::Scenario s = idem::loadScenario("wallet", kDir);
  CHECK(s.name == "wallet");
  CHECK(s.file == kDir / "wallet.json");
  CHECK(s.idField() == "event_id");
  CHECK(s.tables == std::vector<std::string>{"wallets"});
  CHECK(s.keys == std::vector<std::string>{"w1", "w2", "w3"});
  REQUIRE(s.invariants.size() == 1);
  CHECK(s.invariants[0].kind == "sum-of-distinct");
  CHECK(s.invariants[0].distinct == "event_id");
  idem::Schedule d = idem::defaultSchedule(s);
  CHECK(d.scenario == "wallet");
  REQUIRE(d.events.size() == 5);
  for (int i = 0; i < 5; ++i) {
    CHECK(d.events[i].n == i + 1);
    CHECK(d.events[i].fields.at("n") == std::to_string(i + 1));
    CHECK(d.events[i].fields.at("wallet") == "w1");
    CHECK(d.events[i].fields.at("amount") == "5000");
    CHECK_FALSE(d.events[i].fields.count("event_id"));
  }
  CHECK(streamOf(d) == std::vector<std::string>{"1/1", "2/1", "3/1", "4/1", "5/1", "2/1"});
  CHECK(d.faults.empty());
  CHECK(d.retries() == 1);
}

TEST_CASE("customer-city: versions 2, 3, 1 of c1 and a late retry of version 1", "[scenario][builtin]") {
  idem::Scenario s = idem::loadScenario("customer-city", kDir);
  idem::Schedule d = idem::defaultSchedule(s);
  REQUIRE(d.events.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(d.events[i].fields.at("customer") == "c1");
    CHECK(d.events[i].fields.at("version") == std::to_string(i + 1));
  }
  CHECK(streamOf(d) == std::vector<std::string>{"2/1", "3/1", "1/1", "1/2"});
  CHECK(d.phases() == 2);
  REQUIRE(s.invariants.size() == 1);
  CHECK(s.invariants[0].kind == "latest-version");
  CHECK(s.invariants[0].columns == std::vector<std::string>{"city", "version"});
  CHECK(s.invariants[0].observed == "SELECT id, city, version FROM customers");
}

TEST_CASE("order-shipping: ship 1, 2, 3 and retry 2, sku mapped from the order", "[scenario][builtin]") {
  idem::Scenario s = idem::loadScenario("order-shipping", kDir);
  idem::Schedule d = idem::defaultSchedule(s);
  REQUIRE(d.events.size() == 3);
  CHECK(d.events[0].fields.at("sku") == "A");
  CHECK(d.events[1].fields.at("sku") == "A");
  CHECK(d.events[2].fields.at("sku") == "B");
  CHECK(streamOf(d) == std::vector<std::string>{"1/1", "2/1", "3/1", "2/1"});
  REQUIRE(s.invariants.size() == 2);
  CHECK(s.invariants[0].kind == "final-value");
  CHECK(s.invariants[0].value == "shipped");
  CHECK(d.events[1].fields.at("qty") == "2");
  CHECK(s.invariants[1].kind == "sum-of-distinct"); // qty summed: amounts idemproof can make decodable
  CHECK(s.invariants[1].field == "qty");
  CHECK(s.invariants[1].distinct == "order");
  CHECK(s.invariants[1].sign == -1);
  CHECK_THAT(s.create_sql, Contains("CREATE TABLE stock"));
  CHECK(s.tables == std::vector<std::string>{"orders", "stock"});
}

TEST_CASE("an unknown scenario name lists the known ones", "[scenario]") {
  CHECK(usageError([] { idem::loadScenario("nope", kDir); }) ==
        "unknown scenario 'nope' (known: customer-city, order-shipping, orders, payments, wallet, wallet-poison)");
}

TEST_CASE("a scenario given by path is read from that file", "[scenario]") {
  ScratchDir d;
  auto j = nlohmann::json::parse(std::ifstream(kDir / "wallet.json"));
  j["name"] = "my-wallet";
  auto p = d.write("mine.json", j.dump());
  idem::Scenario s = idem::loadScenario(p.string(), kDir);
  CHECK(s.name == "my-wallet");
  CHECK(s.file == p);
  CHECK_THAT(usageError([&] { idem::loadScenario((d.path / "missing.json").string(), kDir); }),
             Contains("missing.json: no such file"));
  d.write("bad.json", "{\"name\": \n\n  }");
  CHECK_THAT(usageError([&] { idem::loadScenario((d.path / "bad.json").string(), kDir); }),
             Contains("bad.json: invalid JSON: parse error at line 3, column 3"));
}

TEST_CASE("a bare name must match the name inside the file", "[scenario]") {
  ScratchDir d;
  auto j = nlohmann::json::parse(std::ifstream(kDir / "wallet.json"));
  d.write("other.json", j.dump());
  CHECK_THAT(usageError([&] { idem::loadScenario("other", d.path); }),
             Contains("other.json: field 'name': 'wallet' does not match the file name 'other'"));
}

TEST_CASE("completeEvents fills computed fields and keeps drawn ones", "[scenario]") {
  idem::Scenario s = idem::loadScenario("customer-city", kDir);
  std::vector<idem::Event> evs = {{2, {{"customer", "c2"}, {"city", "Abha"}}},
                                  {1, {{"customer", "c2"}, {"city", "Riyadh"}}},
                                  {3, {{"customer", "c1"}, {"city", "Abha"}, {"version", "99"}}}};
  idem::completeEvents(s, evs);
  CHECK(evs[1].fields.at("version") == "1"); // event 1 comes first in event order
  CHECK(evs[0].fields.at("version") == "2");
  CHECK(evs[2].fields.at("version") == "1"); // recomputed, per customer
  CHECK(evs[0].fields.at("n") == "2");
  CHECK(evs[0].fields.at("city") == "Abha");

  std::vector<idem::Event> missing = {{1, {{"customer", "c1"}}}};
  CHECK_THAT(usageError([&] { idem::completeEvents(s, missing); }),
             Contains("scenario customer-city: event 1: field 'city': is missing (gen pick)"));
  std::vector<idem::Event> badKey = {{1, {{"customer", "c9"}, {"city", "Abha"}}}};
  CHECK_THAT(usageError([&] { idem::completeEvents(s, badKey); }), Contains("'c9' is not one of the keys"));
  std::vector<idem::Event> unknown = {{1, {{"customer", "c1"}, {"city", "Abha"}, {"zip", "1"}}}};
  CHECK_THAT(usageError([&] { idem::completeEvents(s, unknown); }), Contains("field 'zip': is not a field"));
}

TEST_CASE("freshUuid gives distinct v4 UUIDs", "[scenario]") {
  std::regex v4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string u = idem::freshUuid();
    CHECK(std::regex_match(u, v4));
    seen.insert(u);
  }
  CHECK(seen.size() == 1000);
}

TEST_CASE("the worked example of docs/scenarios.md is a valid scenario", "[scenario][docs]") {
  std::ifstream in(std::string(IDEM_SOURCE_DIR) + "/docs/scenarios.md");
  std::stringstream buf;
  buf << in.rdbuf();
  std::string doc = buf.str();
  auto marker = doc.find("<!-- example: ledger -->");
  REQUIRE(marker != std::string::npos);
  auto begin = doc.find("```json\n", marker);
  REQUIRE(begin != std::string::npos);
  begin += 8;
  auto end = doc.find("```", begin);
  idem::Scenario s = idem::scenarioFromJson(nlohmann::json::parse(doc.substr(begin, end - begin)), "docs/scenarios.md");
  CHECK(s.name == "ledger");
  CHECK(s.idField() == "payment_id");
  CHECK(s.invariants[0].distinct == "payment_id");
  idem::Schedule d = idem::defaultSchedule(s);
  CHECK(d.events[2].fields.at("currency") == "SAR");
  CHECK(d.phases() == 2);
  CHECK(d.retries() == 2);
}
