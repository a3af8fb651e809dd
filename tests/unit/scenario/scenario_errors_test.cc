// One test per rule of the scenario format: every malformed field is a UsageError naming the file and
// the field.
#include "scenario/scenario.h"
#include "test_util.h" // tests/

#include <catch2/catch.hpp>

using idem::testing::usageError;
using nlohmann::json;

namespace {

const char* kWhat = "scenarios/x.json";

json base() {
  return json::parse(R"({
    "name": "x",
    "tables": {"create": "CREATE TABLE wallets (id text, balance bigint);", "initial": "INSERT INTO wallets VALUES ('w1', 0);",
               "names": ["wallets"]},
    "keys": ["w1", "w2"],
    "fields": [{"name": "n", "gen": "seq"}, {"name": "event_id", "gen": "uuid"}, {"name": "wallet", "gen": "key"},
               {"name": "amount", "gen": "int", "min": 1, "max": 100},
               {"name": "kind", "gen": "pick", "values": ["card", "cash"]},
               {"name": "v", "gen": "version", "of": "wallet"},
               {"name": "region", "gen": "map", "of": "wallet", "map": {"w1": "north", "w2": "south"}},
               {"name": "currency", "gen": "const", "value": "SAR"}],
    "default_schedule": {"events": [{"wallet": "w1", "amount": "5", "kind": "card"},
                                    {"wallet": "w2", "amount": 7, "kind": "cash"}],
                         "stream": [1, 2, {"event": 1, "phase": 2}]},
    "invariants": [{"name": "balance", "kind": "sum-of-distinct", "key": "wallet", "field": "amount",
                    "observed": "SELECT id, balance FROM wallets"},
                   {"name": "ledger", "kind": "one-row-per-event", "observed": "SELECT event_id FROM ledger"}]
  })");
}

/// The error for base() with `patch` applied (a JSON merge of pointer -> value; null removes).
std::string err(const std::vector<std::pair<std::string, json>>& patch) {
  json j = base();
  for (const auto& [ptr, value] : patch) {
    json::json_pointer p(ptr);
    if (value.is_null()) j[p.parent_pointer()].erase(p.back());
    else j[p] = value;
  }
  return usageError([&] { idem::scenarioFromJson(j, kWhat); });
}

std::string field(const std::string& f, const std::string& why) {
  return std::string(kWhat) + ": field '" + f + "': " + why;
}

} // namespace

TEST_CASE("the base scenario of these tests is valid", "[scenario][errors]") {
  idem::Scenario s = idem::scenarioFromJson(base(), kWhat);
  idem::Schedule d = idem::defaultSchedule(s);
  REQUIRE(d.events.size() == 2);
  CHECK(d.events[1].fields.at("amount") == "7");
  CHECK(d.events[1].fields.at("region") == "south");
  CHECK(d.events[1].fields.at("currency") == "SAR");
  CHECK(d.events[1].fields.at("v") == "1");
  CHECK(s.invariants[1].distinct == "event_id");
  CHECK(s.tables == std::vector<std::string>{"wallets"});
}

TEST_CASE("SQL may be written as an array of lines", "[scenario][errors]") {
  json j = base();
  j["tables"]["create"] = {"CREATE TABLE a (x int);", "CREATE TABLE b (y int);"};
  CHECK(idem::scenarioFromJson(j, kWhat).create_sql == "CREATE TABLE a (x int);\nCREATE TABLE b (y int);\n");
}

TEST_CASE("scenario: top level", "[scenario][errors]") {
  CHECK(usageError([] { idem::scenarioFromJson(json::array(), kWhat); }) == "scenarios/x.json: must be a JSON object");
  CHECK(err({{"/nmae", "x"}}) ==
        field("nmae", "unknown field (known: name, description, kind, http, tables, keys, fields, default_schedule, invariants, "
                     "retry_window_ms, prune, poison, sink)"));
  CHECK(err({{"/name", nullptr}}) == field("name", "is required"));
  CHECK(err({{"/name", 3}}) == field("name", "must be a non-empty string"));
  CHECK(err({{"/name", "a b"}}) == field("name", "'a b' must be letters, digits, '.', '_' or '-'"));
  CHECK(err({{"/description", 1}}) == field("description", "must be a string"));
}

TEST_CASE("scenario: the producer's retry window and the retention job's prune", "[scenario][errors]") {
  CHECK(err({{"/retry_window_ms", "60s"}}) == field("retry_window_ms", "must be an integer"));
  CHECK(err({{"/retry_window_ms", 0}}) == field("retry_window_ms", "0 is not from 1 to 31622400000 (ms)"));
  CHECK(err({{"/prune", "DELETE FROM processed_messages"}}) ==
        field("prune", "must use $1 (the retention, an interval) and no other parameter"));
  CHECK(err({{"/prune", "DELETE FROM t WHERE a < $1 AND b < $2"}}) ==
        field("prune", "must use $1 (the retention, an interval) and no other parameter"));
  json j = base();
  j["retry_window_ms"] = 60000;
  j["prune"] = json::array({"DELETE FROM processed_messages", "WHERE processed_at < now() - $1::interval"});
  const idem::Scenario s = idem::scenarioFromJson(j, kWhat);
  CHECK(s.retryWindowMs == 60000);
  CHECK(s.prune == "DELETE FROM processed_messages\nWHERE processed_at < now() - $1::interval\n");
  CHECK(!idem::scenarioFromJson(base(), kWhat).retryWindowMs); // absent: the producer may retry at any time
}

TEST_CASE("scenario: tables", "[scenario][errors]") {
  CHECK(err({{"/tables", nullptr}}) == field("tables", "is required"));
  CHECK(err({{"/tables", "CREATE"}}) == field("tables", "must be an object"));
  CHECK(err({{"/tables/create", nullptr}}) == field("tables.create", "is required"));
  CHECK(err({{"/tables/create", ""}}) == field("tables.create", "must be a non-empty string"));
  CHECK(err({{"/tables/create", json::array({"", " "})}}) == field("tables.create", "must not be empty"));
  CHECK(err({{"/tables/create", json::array({1})}}) == field("tables.create[0]", "must be a string"));
  CHECK(err({{"/tables/initial", 5}}) == field("tables.initial", "must be a string or an array of strings"));
  CHECK(err({{"/tables/names", json::array()}}) == field("tables.names", "must be a non-empty array of strings"));
  CHECK(err({{"/tables/names", json::array({"wallets; DROP"})}}) ==
        field("tables.names[0]", "'wallets; DROP' is not a table name (name or schema.name)"));
  CHECK(err({{"/tables/drop", "x"}}) == field("tables.drop", "unknown field (known: create, initial, names)"));
}

TEST_CASE("scenario: keys", "[scenario][errors]") {
  CHECK(err({{"/keys", "w1"}}) == field("keys", "must be a non-empty array of strings"));
  CHECK(err({{"/keys", json::array({"w1", "w1"})}}) == field("keys[1]", "'w1' appears twice"));
  CHECK(err({{"/keys", json::array({""})}}) == field("keys[0]", "must be a non-empty string"));
  CHECK(err({{"/keys", nullptr}}) == field("fields[2].gen", "'key' needs a non-empty top-level 'keys' array"));
}

TEST_CASE("scenario: fields", "[scenario][errors]") {
  CHECK(err({{"/fields", json::array()}}) == field("fields", "must be a non-empty array of field generators"));
  CHECK(err({{"/fields/0", "n"}}) == field("fields[0]", "must be an object"));
  CHECK(err({{"/fields/0/name", nullptr}}) == field("fields[0].name", "is required"));
  CHECK(err({{"/fields/3/name", "wallet"}}) == field("fields[3].name", "'wallet' is defined twice"));
  CHECK(err({{"/fields/3/gen", "float"}}) ==
        field("fields[3].gen", "'float' is not one of seq, uuid, key, int, pick, version, map, const"));
  CHECK(err({{"/fields/3/values", json::array({"a"})}}) == field("fields[3].values", "unknown field (known: name, gen, min, max)"));
  CHECK(err({{"/fields/3/min", nullptr}}) == field("fields[3].min", "is required"));
  CHECK(err({{"/fields/3/max", "100"}}) == field("fields[3].max", "must be an integer"));
  CHECK(err({{"/fields/3/max", 0}}) == field("fields[3].max", "0 is less than min 1"));
  CHECK(err({{"/fields/4/values", json::array()}}) == field("fields[4].values", "must be a non-empty array of strings"));
  CHECK(err({{"/fields/4/values", json::array({"a", "a"})}}) == field("fields[4].values", "'a' appears twice"));
  CHECK(err({{"/fields/7/value", nullptr}}) == field("fields[7].value", "is required"));
}

TEST_CASE("scenario: 'of' must name an earlier field, a map must cover every value", "[scenario][errors]") {
  CHECK(err({{"/fields/5/of", "region"}}) ==
        field("fields[5].of", "'region' is not a field defined before 'v' (earlier fields: n, event_id, wallet, amount, kind)"));
  CHECK(err({{"/fields/5/of", "v"}}) ==
        field("fields[5].of", "'v' is not a field defined before 'v' (earlier fields: n, event_id, wallet, amount, kind)"));
  CHECK(err({{"/fields/6/of", nullptr}}) == field("fields[6].of", "is required"));
  CHECK(err({{"/fields/6/map", nullptr}}) == field("fields[6].map", "must be a non-empty object of strings"));
  CHECK(err({{"/fields/6/map/w2", nullptr}}) == field("fields[6].map", "no entry for 'w2' (a value of field 'wallet')"));
  CHECK(err({{"/fields/6/map/w2", 2}}) == field("fields[6].map.w2", "must be a string"));
}

TEST_CASE("scenario: exactly one uuid field, at most one seq field", "[scenario][errors]") {
  CHECK(err({{"/fields/1/gen", "const"}, {"/fields/1/value", "x"}}) ==
        field("fields", "exactly one field must have gen 'uuid' (the event's identity); found 0"));
  CHECK(err({{"/fields/7", json{{"name", "id2"}, {"gen", "uuid"}}}}) ==
        field("fields", "exactly one field must have gen 'uuid' (the event's identity); found 2"));
  CHECK(err({{"/fields/7", json{{"name", "n2"}, {"gen", "seq"}}}}) == field("fields", "at most one field may have gen 'seq'"));
  json j = base();
  j["fields"].erase(0); // no seq field at all is fine
  j["invariants"][0]["observed"] = "SELECT 1";
  CHECK_NOTHROW(idem::scenarioFromJson(j, kWhat));
}

TEST_CASE("scenario: invariant kind and members", "[scenario][errors]") {
  CHECK(err({{"/invariants", json::array()}}) == field("invariants", "must be a non-empty array of invariants"));
  CHECK(err({{"/invariants/0/kind", "sum"}}) ==
        field("invariants[0].kind",
              "'sum' is not one of sum-of-distinct, count-of-distinct, latest-version, final-value, one-row-per-event"));
  CHECK(err({{"/invariants/1/name", "balance"}}) == field("invariants[1].name", "'balance' is defined twice"));
  CHECK(err({{"/invariants/0/observed", nullptr}}) == field("invariants[0].observed", "is required"));
  CHECK(err({{"/invariants/0/value", "x"}}) ==
        field("invariants[0].value", "unknown field (known: name, kind, observed, key, field, distinct, sign)"));
  CHECK(err({{"/invariants/1/key", "wallet"}}) ==
        field("invariants[1].key", "unknown field (known: name, kind, observed, distinct)"));
}

TEST_CASE("scenario: invariant fields must exist", "[scenario][errors]") {
  const std::string fields = "(fields: n, event_id, wallet, amount, kind, v, region, currency)";
  CHECK(err({{"/invariants/0/key", "walet"}}) == field("invariants[0].key", "'walet' is not a field " + fields));
  CHECK(err({{"/invariants/0/key", nullptr}}) == field("invariants[0].key", "is required"));
  CHECK(err({{"/invariants/0/field", "amt"}}) == field("invariants[0].field", "'amt' is not a field " + fields));
  CHECK(err({{"/invariants/0/field", nullptr}}) == field("invariants[0].field", "is required"));
  CHECK(err({{"/invariants/0/distinct", "id"}}) == field("invariants[0].distinct", "'id' is not a field " + fields));
  CHECK(err({{"/invariants/0/field", "region"}}) ==
        field("invariants[0].field", "'region' (gen map) does not always hold an integer, so it cannot be summed"));
  CHECK(err({{"/invariants/0/sign", 2}}) == field("invariants[0].sign", "2 is not 1 or -1"));
  CHECK(err({{"/invariants/0/sign", "-1"}}) == field("invariants[0].sign", "must be an integer"));
}

TEST_CASE("scenario: latest-version and final-value members", "[scenario][errors]") {
  json lv = {{"name", "latest"}, {"kind", "latest-version"}, {"key", "wallet"}, {"version", "v"},
             {"columns", {"kind", "v"}}, {"observed", "SELECT id, kind, v FROM w"}};
  CHECK_NOTHROW(idem::scenarioFromJson([&] { json j = base(); j["invariants"].push_back(lv); return j; }(), kWhat));
  CHECK(err({{"/invariants/2", lv}, {"/invariants/2/version", "ver"}}) ==
        field("invariants[2].version", "'ver' is not a field (fields: n, event_id, wallet, amount, kind, v, region, currency)"));
  CHECK(err({{"/invariants/2", lv}, {"/invariants/2/version", "kind"}}) ==
        field("invariants[2].version", "'kind' (gen pick) does not always hold an integer version"));
  CHECK(err({{"/invariants/2", lv}, {"/invariants/2/columns", json::array()}}) ==
        field("invariants[2].columns", "must be a non-empty array of strings"));
  CHECK(err({{"/invariants/2", lv}, {"/invariants/2/columns", {"kind", "town"}}}) ==
        field("invariants[2].columns[1]", "'town' is not a field (fields: n, event_id, wallet, amount, kind, v, region, currency)"));
  json fv = {{"name", "final"}, {"kind", "final-value"}, {"key", "wallet"}, {"observed", "SELECT id, s FROM w"}};
  CHECK(err({{"/invariants/2", fv}}) == field("invariants[2].value", "is required"));
  CHECK(err({{"/invariants/2", fv}, {"/invariants/2/value", 1}}) == field("invariants[2].value", "must be a string"));
}

TEST_CASE("scenario: default_schedule events", "[scenario][errors]") {
  CHECK(err({{"/default_schedule", nullptr}}) == field("default_schedule", "is required"));
  CHECK(err({{"/default_schedule/kills", json::array()}}) == field("default_schedule.kills", "unknown field (known: events, stream, client)"));
  CHECK(err({{"/default_schedule/events", json::array()}}) ==
        field("default_schedule.events", "must be a non-empty array of events (objects of field values)"));
  CHECK(err({{"/default_schedule/events/0", 1}}) == field("default_schedule.events[0]", "must be an object"));
  CHECK(err({{"/default_schedule/events/0/wallet", "w9"}}) ==
        field("default_schedule.events[0].wallet", "'w9' is not one of the keys (w1, w2)"));
  CHECK(err({{"/default_schedule/events/0/wallet", nullptr}}) ==
        field("default_schedule.events[0].wallet", "is required (gen key)"));
  CHECK(err({{"/default_schedule/events/0/amount", "500"}}) ==
        field("default_schedule.events[0].amount", "'500' is not an integer in [1, 100]"));
  CHECK(err({{"/default_schedule/events/0/amount", "5x"}}) ==
        field("default_schedule.events[0].amount", "'5x' is not an integer in [1, 100]"));
  CHECK(err({{"/default_schedule/events/0/amount", 1.5}}) ==
        field("default_schedule.events[0].amount", "must be a string (or an integer)"));
  CHECK(err({{"/default_schedule/events/0/kind", "cheque"}}) ==
        field("default_schedule.events[0].kind", "'cheque' is not one of the values (card, cash)"));
  CHECK(err({{"/default_schedule/events/0/event_id", "abc"}}) ==
        field("default_schedule.events[0].event_id", "is a uuid, generated fresh for every execution; leave it out"));
  CHECK(err({{"/default_schedule/events/0/v", "3"}}) ==
        field("default_schedule.events[0].v", "is computed (gen version); leave it out"));
  CHECK(err({{"/default_schedule/events/0/colour", "red"}}) ==
        field("default_schedule.events[0].colour",
              "is not a field (fields: n, event_id, wallet, amount, kind, v, region, currency)"));
}

TEST_CASE("scenario: default_schedule stream", "[scenario][errors]") {
  CHECK(err({{"/default_schedule/stream", json::array()}}) ==
        field("default_schedule.stream", "must be a non-empty array of event numbers (or {\"event\": n, \"phase\": p})"));
  CHECK(err({{"/default_schedule/stream/1", 3}}) ==
        field("default_schedule.stream[1]", "no event 3 (events are numbered 1 to 2)"));
  CHECK(err({{"/default_schedule/stream/1", 0}}) ==
        field("default_schedule.stream[1]", "no event 0 (events are numbered 1 to 2)"));
  CHECK(err({{"/default_schedule/stream/1", "2"}}) ==
        field("default_schedule.stream[1]", "must be an event number or {\"event\": n, \"phase\": p}"));
  CHECK(err({{"/default_schedule/stream/2/phase", 0}}) == field("default_schedule.stream[2].phase", "must be an integer >= 1"));
  CHECK(err({{"/default_schedule/stream/2/when", 1}}) ==
        field("default_schedule.stream[2].when", "unknown field (known: event, phase)"));
  CHECK(err({{"/default_schedule/stream/2/event", nullptr}}) == field("default_schedule.stream[2].event", "is required"));
  CHECK(err({{"/default_schedule/stream", json::array({json{{"event", 1}, {"phase", 2}}, 2})}}) ==
        field("default_schedule.stream[1]", "phases must not decrease along the stream"));
  CHECK(err({{"/default_schedule/stream", json::array({1, 1})}}) == field("default_schedule.stream", "event 2 is never sent"));
}

TEST_CASE("scenario: the sink's fields", "[scenario][errors]") {
  json j = base();
  j["sink"] = {{"path", "/charges"}, {"booked", "SELECT event_id FROM ledger"},
               {"policy", {{"keys", "ignore"}, {"mismatch", 409}}},
               {"answer", {{"status", 201}, {"body", {{"id", "ch_{execution}"}}}}}};
  idem::Scenario s = idem::scenarioFromJson(j, kWhat);
  REQUIRE(s.sink);
  CHECK(s.sink->method == "POST");
  CHECK(s.sink->ref == "event_id"); // the scenario's uuid field by default
  CHECK(s.sink->keyHeader == "Idempotency-Key");
  CHECK_FALSE(s.sink->honoursKeys);
  CHECK(s.sink->mismatch == 409);
  CHECK(s.sink->status == 201);
  CHECK(s.sink->answer == json{{"id", "ch_{execution}"}});
  CHECK(err({{"/sink", {{"path", "/charges"}}}}) == field("sink.booked", "is required"));
  CHECK(err({{"/sink", {{"path", "charges"}, {"booked", "SELECT 1"}}}}) ==
        field("sink.path", "'charges' is not an absolute request path without a query (\"/charges\")"));
  CHECK(err({{"/sink", {{"booked", "SELECT 1"}, {"policy", {{"keys", "maybe"}}}}}}) ==
        field("sink.policy.keys", "'maybe' is not one of honour, ignore"));
  CHECK(err({{"/sink", {{"booked", "SELECT 1"}, {"answer", {{"status", 500}}}}}}) ==
        field("sink.answer.status", "500 is not a success (200 to 299)"));
  CHECK(err({{"/sink", {{"booked", "SELECT 1"}, {"refs", "x"}}}}) ==
        field("sink.refs", "unknown field (known: method, path, ref, key_header, policy, answer, booked, timeout_ms)"));
  CHECK(err({{"/sink", {{"booked", "SELECT 1"}, {"timeout_ms", 0}}}}) ==
        field("sink.timeout_ms", "0 is not from 1 to 600000 (ms)"));
  CHECK(err({{"/sink", {{"booked", "SELECT 1"}, {"timeout_ms", "2s"}}}}).find("sink.timeout_ms") != std::string::npos);
}
