/// Faults other than kills at an HTTP server's steps, through the real binary: a dropped connection and an
/// injected error that http-correct rides out, and a drop after the COMMIT that leaves http-key-outside-tx's
/// key in progress for good, diagnosed by the request the fault hit and the step.
#include "support.h"

#include <catch2/catch.hpp>

#include <fstream>

using namespace itest;

namespace http_faults_itest {

/// A schedule file of the orders scenario: two payloads, these requests and these faults.
std::string scheduleWith(const std::string& name, const nlohmann::json& client, const nlohmann::json& faults) {
  nlohmann::json s = nlohmann::json::parse(R"({"version": 2, "scenario": "orders", "events": [
      {"n": 1, "fields": {"customer": "alice", "sku": "sku-1", "qty": "2", "amount": "4500"}},
      {"n": 2, "fields": {"customer": "bob", "sku": "sku-2", "qty": "1", "amount": "1200"}}]})");
  s["client"] = client;
  s["faults"] = faults;
  auto path = scratchPath("http-faults-" + name + ".json");
  std::ofstream(path) << s.dump(2);
  return path.string();
}

TEST_CASE("http faults: correct rides out a drop and an error at its steps, key-outside-tx's key stuck by a drop",
          "[http]") {
  const nlohmann::json requests = {{{"op", "send"}, {"key", 1}}, {{"op", "send"}, {"key", 2}}, {{"op", "send"}, {"key", 1}}};
  // The ambiguous commit of r1 and a serialization failure at r2's COMMIT: the client's retries end each
  // key with one order and its first answer.
  Result correct = clean({"replay", scheduleWith("correct", requests, {"drop:after:COMMIT#1", "error:before:COMMIT#2:40001"}),
                          "--target", target("http-correct")});
  INFO(correct.out << correct.err);
  CHECK(correct.status == 0);
  int fired = 0;
  for (const auto& op : correct.report["runs"][0]["history"])
    if (op["type"] == "fault") ++fired;
  CHECK(fired == 2);

  Result stuck = clean({"run", "--target", target("http-key-outside-tx"), "--scenario", "orders", "--crash",
                        "drop:after:COMMIT#1"});
  INFO(stuck.out << stuck.err);
  CHECK(stuck.status == 1);
  auto v = violations(stuck.report, "stuck-key");
  REQUIRE(v.size() == 1);
  const std::string message = v[0]["message"];
  CHECK(message.find("r1 (the first request of key 1) was in flight when s1's connection dropped at "
                     "drop:after:COMMIT#1") != std::string::npos);
  CHECK(v[0]["pattern"]["id"] == "http-key-outside-transaction");
}

} // namespace http_faults_itest
