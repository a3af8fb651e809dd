// The reference HTTP targets' bodies (targets/common/form.h, orders.h): form pairs decoded, their canonical
// form, and an order's hash under each payload_equivalence: a reordered retry hashes alike under "json" and
// "form", differently under "bytes"; a changed value always differently.
#include "form.h"
#include "orders.h"

#include <catch2/catch.hpp>

using namespace idem::targets::http;

TEST_CASE("form bodies: pairs decoded in order, malformed ones refused", "[target][http]") {
  auto p = parseForm("a=1&b=x+y%26z&c=");
  REQUIRE(p);
  CHECK(*p == FormPairs{{"a", "1"}, {"b", "x y&z"}, {"c", ""}});
  CHECK(parseForm("")->empty());
  for (const char* bad : {"a", "a=1&", "a=%2", "a=%zz", "&a=1"}) {
    INFO(bad);
    CHECK_FALSE(parseForm(bad));
  }
  CHECK(canonicalForm({{"b", "2"}, {"a", "x y"}}) == "a=x+y&b=2");
  CHECK(canonicalForm(*parseForm("b=2&a=x%20y")) == canonicalForm(*parseForm("a=x+y&b=2")));
}

TEST_CASE("form bodies: an order's hash follows the declared payload equivalence", "[target][http]") {
  const std::string form = "ref=r1&customer=alice&sku=sku-1&qty=2&amount=4500";
  const std::string reordered = "amount=4500&qty=2&sku=sku-1&customer=alice&ref=r1";
  const char* type = "application/x-www-form-urlencoded";
  auto a = parseOrder(form, type, "form"), b = parseOrder(reordered, type, "form");
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->qty == 2);
  CHECK(a->amount == 4500);
  CHECK(a->customer == "alice");
  CHECK(a->hash == b->hash);
  CHECK(parseOrder(form, type, "bytes")->hash != parseOrder(reordered, type, "bytes")->hash);
  CHECK(parseOrder(form, type, "form")->hash != parseOrder("ref=r1&customer=alice&sku=sku-1&qty=3&amount=4500", type, "form")->hash);
  CHECK_FALSE(parseOrder("ref=r1&customer=alice&sku=sku-1&qty=two&amount=4500", type, "form"));
  CHECK_FALSE(parseOrder(form + "&qty=3", type, "form")); // a name twice
  const std::string json = R"({"ref":"r1","customer":"alice","sku":"sku-1","qty":2,"amount":4500})";
  const std::string jsonReordered = R"({"amount":4500,"qty":2,"sku":"sku-1","customer":"alice","ref":"r1"})";
  CHECK(parseOrder(json, "application/json", "json")->hash == parseOrder(jsonReordered, "application/json", "json")->hash);
  CHECK(parseOrder(json, "application/json", "bytes")->hash != parseOrder(jsonReordered, "application/json", "bytes")->hash);
  CHECK(parseOrder(json, "application/json; charset=utf-8", "")->hash == parseOrder(json)->hash);
}
