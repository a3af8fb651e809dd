// The "poison" member of a scenario: its parsing, the default schedule's poison events, and one error line
// naming the field for each mistake.
#include "scenario/decodable.h"
#include "scenario/scenario.h"
#include "test_util.h" // tests/

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using idem::testing::usageError;
using nlohmann::json;

namespace poison_scenario {

const char* kWhat = "scenarios/p.json";

json base() {
  return json::parse(R"({
    "name": "p",
    "tables": {"create": ["CREATE TABLE wallets (id text, balance bigint);", "CREATE TABLE dlq (event_id text);"],
               "initial": "INSERT INTO wallets VALUES ('w1', 0);", "names": ["wallets", "dlq"]},
    "keys": ["w1", "w2"],
    "fields": [{"name": "n", "gen": "seq"}, {"name": "event_id", "gen": "uuid"}, {"name": "wallet", "gen": "key"},
               {"name": "amount", "gen": "int", "min": 1, "max": 100}],
    "default_schedule": {"events": [{"wallet": "w1", "amount": "5"}, {"wallet": "w1"}, {"wallet": "w2", "amount": 7}],
                         "stream": [1, 2, 3]},
    "poison": {"events": [2], "fields": {"amount": "-1"}, "dead_letter": {"table": "dlq"}, "max_deliveries": 3},
    "invariants": [{"name": "balance", "kind": "sum-of-distinct", "key": "wallet", "field": "amount",
                    "observed": "SELECT id, balance FROM wallets"}]
  })");
}

std::string err(const std::vector<std::pair<std::string, json>>& patch) {
  json j = base();
  for (const auto& [ptr, value] : patch) {
    json::json_pointer p(ptr);
    if (value.is_null()) j[p.parent_pointer()].erase(p.back());
    else j[p] = value;
  }
  return usageError([&] { idem::scenarioFromJson(j, kWhat); });
}

std::string field(const std::string& f, const std::string& why) { return std::string(kWhat) + ": field '" + f + "': " + why; }

} // namespace poison_scenario


TEST_CASE("poison: the default schedule's poison events take the poison values", "[scenario][poison]") {
  idem::Scenario s = idem::scenarioFromJson(poison_scenario::base(), poison_scenario::kWhat);
  REQUIRE(s.poison);
  CHECK(s.poison->deadLetterTable == "dlq");
  CHECK(s.poison->deadLetterId == "event_id");
  CHECK(s.poison->maxDeliveries == 3);
  idem::Schedule d = idem::defaultSchedule(s);
  CHECK(d.events[1].fields.at("amount") == "-1");
  CHECK(d.events[1].fields.at("wallet") == "w1");
  CHECK(s.isPoison(d.events[1].fields));
  CHECK_FALSE(s.isPoison(d.events[0].fields));
  // Values idemproof chooses leave the poison event as it is, and count it in no sum.
  idem::makeDecodable(s, d, 0);
  CHECK(d.events[1].fields.at("amount") == "-1");
  CHECK(d.events[0].fields.at("amount") == "1");
}

TEST_CASE("poison: a stream dead letter, and scenarios without poison", "[scenario][poison]") {
  json j = poison_scenario::base();
  j["poison"]["dead_letter"] = {{"stream", "dlq"}, {"id", "event_id"}};
  auto s = idem::scenarioFromJson(j, poison_scenario::kWhat);
  CHECK(s.poison->deadLetterStream == "dlq");
  CHECK(s.poison->deadLetterTable.empty());
  CHECK(s.poison->brokerDeadLetter() == std::pair<std::string, std::string>{"stream", "dlq"});
  j["poison"]["dead_letter"] = {{"queue", "dlq"}};
  CHECK(idem::scenarioFromJson(j, poison_scenario::kWhat).poison->brokerDeadLetter() ==
        std::pair<std::string, std::string>{"queue", "dlq"});
  auto wallet = idem::loadScenario("wallet", std::filesystem::path(IDEM_SOURCE_DIR) / "scenarios");
  CHECK_FALSE(wallet.poison);
  auto poison = idem::loadScenario("wallet-poison", std::filesystem::path(IDEM_SOURCE_DIR) / "scenarios");
  REQUIRE(poison.poison);
  CHECK(poison.poison->events == std::vector<int>{3});
  // check's generated schedules: every third event is poison.
  std::vector<idem::Event> events;
  for (int n = 1; n <= 7; ++n) events.push_back({n, {{"wallet", "w1"}, {"amount", "100"}}});
  idem::poisonGenerated(poison, events);
  for (const auto& e : events) CHECK(poison.isPoison(e.fields) == (e.n == 3 || e.n == 6));
  idem::poisonGenerated(wallet, events); // no poison: nothing changes
  CHECK(events[0].fields.at("amount") == "100");
}

TEST_CASE("poison: each mistake is one line naming the field", "[scenario][poison]") {
  CHECK(poison_scenario::err({{"/poison/color", 1}}) ==
        poison_scenario::field("poison.color", "unknown field (known: events, fields, dead_letter, max_deliveries, every)"));
  CHECK(poison_scenario::err({{"/poison/events", json::array()}}) ==
        poison_scenario::field("poison.events", "must be a non-empty array of event numbers of the default schedule"));
  CHECK(poison_scenario::err({{"/poison/events", {0}}}) == poison_scenario::field("poison.events[0]", "must be an event number (1, 2, ...)"));
  CHECK(poison_scenario::err({{"/poison/events", {2, 2}}}) == poison_scenario::field("poison.events[1]", "event 2 appears twice"));
  CHECK(poison_scenario::err({{"/poison/events", {4}}, {"/default_schedule/events/1/amount", "5"}}) ==
        poison_scenario::field("poison.events[0]", "no event 4 (the default schedule's events are numbered 1 to 3)"));
  CHECK(poison_scenario::err({{"/poison/fields", {{"amont", "-1"}}}}) ==
        poison_scenario::field("poison.fields.amont", "is not a field (fields: n, event_id, wallet, amount)"));
  CHECK(poison_scenario::err({{"/poison/fields", {{"n", "0"}}}}) ==
        poison_scenario::field("poison.fields.n", "is computed (gen seq); a poison value goes in a drawn field (key, int, pick)"));
  CHECK(poison_scenario::err({{"/poison/fields", {{"amount", "50"}}}}) ==
        poison_scenario::field("poison.fields", "every value is one its generator draws: name at least one it never draws (an amount "
                               "out of range, a key not in keys), so that no ordinary event is poison by chance"));
  CHECK(poison_scenario::err({{"/poison/dead_letter", nullptr}}) ==
        poison_scenario::field("poison.dead_letter", "is required: {\"stream\": NAME}, {\"queue\": NAME}, {\"topic\": NAME} or {\"table\": NAME}, and optionally \"id\""));
  CHECK(poison_scenario::err({{"/poison/dead_letter", {{"stream", "a"}, {"table", "dlq"}}}}) ==
        poison_scenario::field("poison.dead_letter.stream", "give exactly one of stream, queue, topic and table"));
  CHECK(poison_scenario::err({{"/poison/dead_letter", {{"table", "other"}}}}) ==
        poison_scenario::field("poison.dead_letter.table", "'other' is not in tables.names: idemproof empties it between runs"));
  CHECK(poison_scenario::err({{"/poison/dead_letter", {{"queue", "q"}, {"table", "dlq"}}}}) ==
        poison_scenario::field("poison.dead_letter.stream", "give exactly one of stream, queue, topic and table"));
  CHECK(poison_scenario::err({{"/poison/dead_letter", {{"stream", "a b"}}}}) ==
        poison_scenario::field("poison.dead_letter.stream", "'a b' must be letters, digits, '_', '.', '-' or ':'"));
  CHECK(poison_scenario::err({{"/poison/max_deliveries", nullptr}}) == poison_scenario::field("poison.max_deliveries", "is required"));
  CHECK(poison_scenario::err({{"/poison/every", 0}}) == poison_scenario::field("poison.every", "0 is not an integer in [1, 1000]"));
  CHECK(poison_scenario::err({{"/poison/max_deliveries", 0}}) == poison_scenario::field("poison.max_deliveries", "0 is not an integer in [1, 1000]"));
}

TEST_CASE("poison: the worked example of docs/scenarios.md is scenarios/wallet-poison.json", "[scenario][poison][docs]") {
  std::ifstream in(std::string(IDEM_SOURCE_DIR) + "/docs/scenarios.md");
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string doc = buf.str();
  auto marker = doc.find("<!-- example: wallet-poison -->");
  REQUIRE(marker != std::string::npos);
  auto begin = doc.find("```json\n", marker);
  REQUIRE(begin != std::string::npos);
  begin += 8;
  json example = json::parse(doc.substr(begin, doc.find("```", begin) - begin));
  std::ifstream file(std::string(IDEM_SOURCE_DIR) + "/scenarios/wallet-poison.json");
  json builtin = json::parse(file);
  builtin.erase("description");
  CHECK(example == builtin);
  CHECK(idem::scenarioFromJson(example, "docs/scenarios.md").poison->events == std::vector<int>{3});
}
