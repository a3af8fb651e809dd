// The HTTP scenario's policy and request fields that could not be judged, each refused in one line naming
// its field (docs/http-contract.md): statuses out of their class, two answers with one status, a key header
// the client itself must write, an unknown replay comparison, a wait past the retention bound.
#include "scenario/scenario.h"
#include "test_util.h" // tests/

#include <catch2/catch.hpp>

#include <fstream>

using idem::testing::usageError;
using nlohmann::json;

namespace {

const char* kOrdersWhat = "orders-x.json";

json ordersJson() {
  std::ifstream in(std::filesystem::path(IDEM_SOURCE_DIR) / "scenarios" / "orders.json");
  return json::parse(in);
}

std::string policyErr(const std::string& pointer, const json& value) {
  json j = ordersJson();
  j[json::json_pointer(pointer)] = value;
  return usageError([&] { idem::scenarioFromJson(j, kOrdersWhat); });
}

std::string policyField(const std::string& f, const std::string& why) {
  return std::string(kOrdersWhat) + ": field '" + f + "': " + why;
}

} // namespace

TEST_CASE("http policy: the orders scenario reads as declared, replays compared as JSON by default", "[scenario][http]") {
  idem::Scenario s = idem::scenarioFromJson(ordersJson(), kOrdersWhat);
  REQUIRE(s.http);
  CHECK(s.http->policy.replayEquivalence == "json");
  json j = ordersJson();
  j["http"]["policy"]["replay_equivalence"] = "bytes";
  CHECK(idem::scenarioFromJson(j, kOrdersWhat).http->policy.replayEquivalence == "bytes");
}

TEST_CASE("http policy: statuses that could not be told apart are refused", "[scenario][http]") {
  CHECK(policyErr("/http/policy/mismatch", 200) ==
        policyField("http.policy.mismatch", "200 is not a client error (4xx): the checkers could not tell it from other answers"));
  CHECK(policyErr("/http/policy/created", 422) ==
        policyField("http.policy.created", "422 is not a success (2xx): the checkers could not tell it from other answers"));
  CHECK(policyErr("/http/policy/missing_key", 302).find("field 'http.policy.missing_key': 302 is not a client error") !=
        std::string::npos);
  CHECK(policyErr("/http/policy/in_flight", 204).find("field 'http.policy.in_flight': 204 is not an error (4xx or 5xx)") !=
        std::string::npos);
  CHECK(policyErr("/http/policy/in_flight", 422) ==
        policyField("http.policy.in_flight", "422 is also the mismatch status: the checkers could not tell a key reused with "
                                       "another payload from one still in flight"));
  CHECK(policyErr("/http/policy/in_flight", 400).find("400 is also the missing_key status") != std::string::npos);
  CHECK(policyErr("/http/policy/replay_equivalence", "loose") ==
        policyField("http.policy.replay_equivalence", "'loose' is not one of bytes, json"));
}

TEST_CASE("http policy: a key header the client itself writes is refused", "[scenario][http]") {
  for (const char* h : {"Host", "Content-Length", "content-type", "Transfer-Encoding", "Connection", "Expect"}) {
    INFO(h);
    CHECK(policyErr("/http/key_header", h).find("field 'http.key_header': '" + std::string(h) +
                                          "' is a header the client itself writes") != std::string::npos);
  }
  CHECK(policyErr("/http/key_header", "").find("field 'http.key_header'") != std::string::npos);
}

TEST_CASE("http requests: a wait past what the client waits out, and a burst racing its own key, are refused",
          "[scenario][http]") {
  // orders remembers a key for a day: the client does not wait that out.
  CHECK(policyErr("/default_schedule/client/1", json{{"op", "send"}, {"key", 1}, {"after_retention", true}}) ==
        policyField("default_schedule.client[1].after_retention",
              "the client would wait out scenario orders's retention_ms of 86400000 ms, longer than the 10000 ms it "
              "waits; use a scenario that declares a shorter http.policy.retention_ms"));
  CHECK(policyErr("/default_schedule/client/1", json{{"op", "burst"}, {"key", 1}, {"other", 1}}) ==
        policyField("default_schedule.client[1].other", "1 is the burst's own key: \"other\" names another event, whose "
                                                  "payload the last copy carries"));
  json j = ordersJson();
  j["http"]["policy"]["retention_ms"] = 500;
  j["default_schedule"]["client"][1] = {{"op", "send"}, {"key", 1}, {"after_retention", true}};
  CHECK(idem::scenarioFromJson(j, kOrdersWhat).default_schedule.client[1].afterRetention);
}

TEST_CASE("http policy: form bodies, and payloads compared as the body's kind unless bytes are declared",
          "[scenario][http]") {
  json j = ordersJson();
  CHECK(idem::scenarioFromJson(j, kOrdersWhat).http->policy.payloadEquivalence == "json");
  j["http"]["body"] = "form";
  idem::Scenario s = idem::scenarioFromJson(j, kOrdersWhat);
  CHECK(s.http->body == "form");
  CHECK(s.http->policy.payloadEquivalence == "form");
  j["http"]["policy"]["payload_equivalence"] = "bytes";
  CHECK(idem::scenarioFromJson(j, kOrdersWhat).http->policy.payloadEquivalence == "bytes");
  CHECK(policyErr("/http/body", "xml") == policyField("http.body", "'xml' is not one of json, form"));
  CHECK(policyErr("/http/policy/payload_equivalence", "form") ==
        policyField("http.policy.payload_equivalence",
                    "\"form\" can't compare json bodies (http.body): use \"json\" or \"bytes\""));
}
