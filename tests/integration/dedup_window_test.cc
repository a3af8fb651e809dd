/// Dedup state that ages (docs/faults.md): an `age` fault moves Valkey TTLs and runs the scenario's prune,
/// and a producer retry after it is judged against the scenario's retry window. The schedules are the
/// wallet with a retry of event 1 in phase 2 (tests/scenarios/wallet-late-retry.json, wallet-pruned.json);
/// each case runs its commands at once.
#include "support.h"

#include <catch2/catch.hpp>

using namespace itest;

namespace {

/// The value of the run's only `age` fault op.
nlohmann::json agedOf(const Result& r) {
  for (const auto& op : r.report["runs"][0]["history"])
    if (op["type"] == "fault" && op["value"].contains("aged")) return op["value"]["aged"];
  FAIL("no age fault op in the history");
  return {};
}

std::string scenario(const char* name) { return (repo() / "tests/scenarios" / name).string(); }

} // namespace

TEST_CASE("dedup window: marks that expire before the producer stops retrying fail, in C++ and Python") {
  const std::string late = scenario("wallet-late-retry.json");
  auto rs = cleanAll({{"run", "--target", target("dedup-valkey-short-ttl"), "--scenario", late, "--crash", "age:after:XACK#2"},
                      {"run", "--target", target("dedup-valkey-short-ttl"), "--scenario", late, "--crash",
                       "age:after:XACK#2:90000"},
                      {"run", "--target", testTarget("py-short-ttl"), "--scenario", late, "--crash", "age:after:XACK#2"},
                      {"run", "--target", target("dedup-valkey"), "--scenario", late, "--crash", "age:after:XACK#2"}});
  for (size_t i : {0, 2}) {
    INFO("a 20 s mark, aged by the 60 s window: the retry of event 1 is applied again");
    const Result& r = rs[i];
    INFO(r.out << r.err);
    REQUIRE(r.status == 1);
    auto v = onlyViolation(r, "dedup-window");
    CHECK(v["events"] == nlohmann::json::array({1}));
    const std::string msg = v["message"];
    CHECK(msg.find("the retry was sent 60000 ms of simulated time after it") != std::string::npos);
    CHECK(msg.find("within the producer's retry window of 60000 ms") != std::string::npos);
    CHECK(agedOf(r)["ms"] == 60000);
    CHECK(agedOf(r)["expired"] == 2);
    CHECK(r.report["violations"].size() == 1);
  }
  {
    INFO("past the window, applying the retry again is right");
    INFO(rs[1].out << rs[1].err);
    CHECK(rs[1].status == 0);
    CHECK(agedOf(rs[1])["ms"] == 90000);
  }
  {
    INFO("marks kept for good: nothing expires, the retry is skipped");
    INFO(rs[3].out << rs[3].err);
    CHECK(rs[3].status == 0);
    CHECK(agedOf(rs[3])["expired"] == 0);
    CHECK(agedOf(rs[3])["moved"] == 0);
  }
}

TEST_CASE("dedup window: the scenario's prune runs with the retention less the simulated time") {
  const std::string pruned = scenario("wallet-pruned.json");
  auto rs = cleanAll({{"run", "--target", testTarget("dedup-table-pruned"), "--scenario", pruned, "--crash",
                       "age:after:XACK#2"},
                      {"run", "--target", testTarget("dedup-table-pruned"), "--scenario", pruned, "--crash",
                       "age:after:XACK#2:10000"},
                      {"run", "--target", target("dedup-table"), "--scenario", pruned, "--crash", "age:after:XACK#2"}});
  {
    INFO("a 20 s retention aged by the 60 s window: both rows pruned, event 1 credited again");
    const Result& r = rs[0];
    INFO(r.out << r.err);
    REQUIRE(r.status == 1);
    auto v = onlyViolation(r, "dedup-window");
    CHECK(v["events"] == nlohmann::json::array({1}));
    CHECK(v["message"].get<std::string>().find("2 rows pruned") != std::string::npos);
    CHECK(agedOf(r)["pruned"] == 2);
    CHECK(agedOf(r)["prune"].get<std::string>().find("now() - '-40000 milliseconds'::interval") != std::string::npos);
  }
  {
    INFO("10 s of a 20 s retention: nothing pruned, the retry is skipped");
    INFO(rs[1].out << rs[1].err);
    CHECK(rs[1].status == 0);
    CHECK(agedOf(rs[1])["pruned"] == 0);
  }
  {
    INFO("dedup-table declares no retention: its rows are kept, and it passes");
    INFO(rs[2].out << rs[2].err);
    CHECK(rs[2].status == 0);
    CHECK(agedOf(rs[2])["skipped"].get<std::string>().find("declares no dedup_ttl_ms") != std::string::npos);
  }
}
