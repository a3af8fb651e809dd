/// Consumers in Node (node-postgres 8, ioredis 5; tests/targets/node-common, installed by
/// scripts/install-deps.sh): an event loop that never parks on one socket, ioredis's INFO ready check,
/// node-postgres's simple and extended protocol, a pg.Pool with entries handled at once. The correct ones
/// pass a check with every fault kind; the acknowledge-first one fails with the same duplicate and loss as
/// its Python twin.
#include "support.h"

#include <catch2/catch.hpp>

#include <set>

using namespace itest;

TEST_CASE("node: dedup-table in Node passes a check with every fault kind") {
  Result r = clean({"check", "--target", testTarget("node-dedup-table"), "--seed", "7", "--runs", "24"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.report["verdict"] == "pass");
  // Faults beyond kills reached it (drop, error, delay, ...): the check is not a kill sweep only.
  std::set<std::string> kinds; // "drop:after:COMMIT#1" -> drop; "after:XACK#2" (a kill) -> after
  for (const auto& run : r.report["check"]["run_summaries"])
    for (const auto& f : run.value("fired", nlohmann::json::array()))
      kinds.insert(f.get<std::string>().substr(0, f.get<std::string>().find(':')));
  INFO(nlohmann::json(kinds).dump());
  CHECK(kinds.size() >= 4); // kill (before/after) and at least two other kinds
}

TEST_CASE("node: dedup-table on a pg.Pool, a batch's entries at once on several connections, passes a check") {
  Result r = clean({"check", "--target", testTarget("node-concurrent"), "--seed", "11", "--runs", "16"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.report["verdict"] == "pass");
}

TEST_CASE("node: acknowledge-first in Node, killed after its fourth XACK, names event 2 applied twice and event 4 lost") {
  Result r = clean({"run", "--target", testTarget("node-ack-first"), "--crash", "after:XACK#4"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  CHECK(r.report["verdict"] == "fail");
  duplicateTwoLostFour(r.report, "run");

  Result c = clean({"check", "--target", testTarget("node-ack-first"), "--seed", "3", "--runs", "20"});
  INFO(c.out << c.err);
  REQUIRE(c.status == 1);
  CHECK(c.report["verdict"] == "fail");
}
