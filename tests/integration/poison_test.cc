/// Poison events (scenarios/wallet-poison.json: event 3 carries amount -500, max_deliveries 3, dead letters in
/// the table dead_letters): the reference targets that redeliver it forever, drop it and dead-letter it, each
/// judged by the poison checker its code breaks; and a Python consumer that retries it forever, judged as
/// poison-retry-forever is, the run ended at max_deliveries + the margin rather than at the deadline.
#include "support.h"

#include <catch2/catch.hpp>

using namespace itest;

namespace {

/// The verdict of checker `name` in the report's only run.
std::string checkVerdict(const Result& r, const std::string& name) {
  for (const auto& c : r.report["runs"][0]["checks"])
    if (c["checker"] == name) return c["verdict"].get<std::string>();
  return "none";
}

} // namespace

TEST_CASE("poison: the reference targets, each judged by the check its handling breaks") {
  auto rs = cleanAll({{"run", "--target", target("poison-retry-forever"), "--scenario", "wallet-poison"},
                      {"run", "--target", target("poison-drop"), "--scenario", "wallet-poison"},
                      {"run", "--target", target("poison-dlq"), "--scenario", "wallet-poison", "--crash",
                       "after:COMMIT#3"}});
  {
    const Result& r = rs[0];
    INFO("poison-retry-forever\n" << r.out << r.err);
    CHECK(r.status == 1);
    CHECK(checkVerdict(r, "poison:bounded") == "fail");
    CHECK(checkVerdict(r, "poison:no-block") == "pass");
    CHECK(checkVerdict(r, "poison:not-applied") == "pass");
    CHECK(!violations(r.report, "unbounded").empty());
    // Judged once the deliveries passed max_deliveries + the margin, not at the deadline.
    CHECK(r.report["runs"][0]["history"].back()["value"]["end"] == "stuck");
  }
  {
    const Result& r = rs[1];
    INFO("poison-drop\n" << r.out << r.err);
    CHECK(r.status == 1);
    CHECK(checkVerdict(r, "poison:dead-lettered") == "fail");
    CHECK(checkVerdict(r, "poison:bounded") == "pass");
    CHECK(checkVerdict(r, "poison:no-block") == "pass");
    CHECK(checkVerdict(r, "poison:not-applied") == "pass");
    CHECK(onlyViolation(r, "not-dead-lettered")["events"] == nlohmann::json::array({3}));
  }
  {
    // Killed after the COMMIT of event 3's dead letter (COMMIT#3: events 1 and 2 commit first, a poison event
    // sends nothing before its dead letter), before its XACK: the redelivery writes no second one.
    const Result& r = rs[2];
    INFO("poison-dlq\n" << r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.report["verdict"] == "pass");
    for (const char* c : {"poison:dead-lettered", "poison:bounded", "poison:no-block", "poison:not-applied"}) {
      INFO(c);
      CHECK(checkVerdict(r, c) == "pass");
    }
  }
}

TEST_CASE("poison: a Python consumer that retries a poison event forever fails poison:bounded") {
  Result r = clean({"run", "--target", testTarget("py-poison-forever"), "--scenario", "wallet-poison"});
  INFO(r.out << r.err);
  CHECK(r.status == 1);
  CHECK(checkVerdict(r, "poison:bounded") == "fail");
  CHECK(checkVerdict(r, "poison:no-block") == "pass");
}
