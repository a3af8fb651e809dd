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
  // Generated schedules only, one or two consumers: seed 2's first 12 draw every kind (kill, drop, delay,
  // error, forget, restart, hold). A point drawn at c2's k-th step that c1's work left unreached is coverage
  // loss, never an unknown (docs/verdicts.md). The class sweep's kill at each (when, verb) runs on Node in
  // node-concurrent's check below, and liveness_test.cc's slowed sweep kills this consumer at every step.
  Result r = clean({"check", "--target", testTarget("node-dedup-table"), "--seed", "2", "--runs", "12",
                    "--no-class-sweep"});
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

  // Schedules of at most 2 events, as for py-ack-first: the search fails at once and shrinks in a few runs.
  Result c = clean({"check", "--target", testTarget("node-ack-first"), "--seed", "3", "--runs", "20", "--max-events", "2"});
  INFO(c.out << c.err);
  REQUIRE(c.status == 1);
  CHECK(c.report["verdict"] == "fail");
}

TEST_CASE("node: check-then-act in Node fails check with a counterexample that fails in 5 replays of 5, its order "
          "fixed by a hold released at a conflicting step, never by ioredis's connection set-up", "[slow]") {
  // ioredis names its connection (CLIENT SETNAME) and sends its INFO ready check as each process connects:
  // neither is a fault point nor a hold's release point, so no hold releases when c2 merely connects.
  // One event per schedule (the race needs no more; every counterexample shrinks to one) and no class sweep
  // (one consumer under kills, which check-then-act passes): seed 3 draws a failing race at its 4th run, and
  // the replays and shrinking that follow are the cost. Its fault kinds are check's default, all of them.
  Result r = clean({"check", "--target", testTarget("node-check-then-act"), "--seed", "3", "--runs", "60",
                    "--replays", "5", "--max-events", "1", "--no-class-sweep"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  CHECK(r.report["verdict"] == "fail");
  CHECK(!violations(r.report, "duplicate").empty());
  const auto& cx = r.report["check"]["counterexample"];
  CHECK(cx["flaky"] == false);
  CHECK(cx["schedule"]["consumers"] == 2);
  for (const auto& f : cx["schedule"]["faults"]) {
    const std::string text = f.get<std::string>();
    CHECK(text.find("CLIENT#") == std::string::npos);
    CHECK(text.find("INFO#") == std::string::npos);
  }
  std::vector<std::string> fails(5, "fail");
  CHECK(cx["replays"] == fails);
  auto args = replayArgs(r.out);
  args.insert(args.end(), {"--replays", "5"});
  Result again = clean(args);
  INFO(again.out << again.err);
  CHECK(again.status == 1);
  CHECK(again.report["replay"]["verdicts"] == fails);
  int named = 0;
  for (const auto& op : again.report["runs"][0]["history"]) {
    if (op["type"] != "step" || op["value"]["verb"] != "CLIENT") continue;
    ++named;
    CHECK(op["value"].value("set_up", false));
  }
  CHECK(named >= 2); // each consumer process named its connection
}
