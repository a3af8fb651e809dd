// supervisor/http_payload.h: a request's body as the scenario's http.body writes it, JSON or form pairs,
// and a reordered retry's (the same values, the fields in reverse order).
#include "supervisor/http_payload.h"

#include <catch2/catch.hpp>

#include <fstream>

using namespace idem;

namespace {

Scenario orders(const char* body) {
  std::ifstream in(std::filesystem::path(IDEM_SOURCE_DIR) / "scenarios" / "orders.json");
  nlohmann::json j = nlohmann::json::parse(in);
  j["http"]["body"] = body;
  return scenarioFromJson(j, "orders.json");
}

const std::map<std::string, std::string> kFields{
    {"ref", "r-1"}, {"customer", "al ice&co"}, {"sku", "sku-1"}, {"qty", "2"}, {"amount", "4500"}};

} // namespace

TEST_CASE("http payload: JSON and form bodies in the scenario's field order, reversed when reordered", "[http]") {
  Scenario json = orders("json"), form = orders("form");
  CHECK(encodePayload(json, kFields, false) ==
        R"({"ref":"r-1","customer":"al ice&co","sku":"sku-1","qty":2,"amount":4500})");
  CHECK(encodePayload(json, kFields, true) ==
        R"({"amount":4500,"qty":2,"sku":"sku-1","customer":"al ice&co","ref":"r-1"})");
  CHECK(encodePayload(form, kFields, false) == "ref=r-1&customer=al+ice%26co&sku=sku-1&qty=2&amount=4500");
  CHECK(encodePayload(form, kFields, true) == "amount=4500&qty=2&sku=sku-1&customer=al+ice%26co&ref=r-1");
  CHECK(std::string(payloadContentType(*form.http)) == "application/x-www-form-urlencoded");
  CHECK(std::string(payloadContentType(*json.http)) == "application/json");
  CHECK(formEncode("a b/ü") == "a+b%2F%C3%BC");
}
