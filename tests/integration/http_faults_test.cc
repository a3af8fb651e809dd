/// Faults other than kills at an HTTP server's steps, through the real binary: a dropped connection and an
/// injected error that http-correct rides out, a drop after the COMMIT that leaves http-key-outside-tx's
/// key in progress for good, diagnosed by the request the fault hit and the step, and the same at the Valkey
/// commands of a server that keeps its keys there (tests/targets/py-orders-valkey); a kill during the client's
/// last retries, whose replacement is slow to start; a server that queries the database before it listens.
#include "support.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <map>

using namespace itest;

namespace http_faults_itest {


TEST_CASE("http faults: correct rides out a drop and an error, key-outside-tx stuck by a drop, Valkey steps too",
          "[http]") {
  const nlohmann::json requests = {{{"op", "send"}, {"key", 1}}, {{"op", "send"}, {"key", 2}}, {{"op", "send"}, {"key", 1}}};
  // The ambiguous commit of r1 and a serialization failure at r2's COMMIT: the client's retries end each
  // key with one order and its first answer.
  Result correct = clean({"replay", ordersSchedule("http-faults-correct", requests, {"drop:after:COMMIT#1", "error:before:COMMIT#2:40001"}),
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

  // A server that keeps its keys in Valkey: its commands are steps too. An error at its first SET is ridden
  // out; the reply of the SET that stores the answer lost, the key and the order come apart.
  Result loading = clean({"run", "--target", testTarget("py-orders-valkey"), "--scenario", "orders", "--crash",
                          "error:before:SET#1:LOADING"});
  INFO(loading.out << loading.err);
  CHECK(loading.status == 0);
  CHECK(verbsOn(loading, "valkey").count("SET") == 1);
  Result apart = clean({"run", "--target", testTarget("py-orders-valkey"), "--scenario", "orders", "--crash",
                        "drop:after:SET#2"});
  INFO(apart.out << apart.err);
  CHECK(apart.status == 1);
  auto twice = violations(apart.report, "double-effect");
  REQUIRE(twice.size() == 1);
  CHECK(twice[0]["message"].get<std::string>().find("r1 (the first request of key 1) was in flight when s1's "
                                                    "connection dropped at drop:after:SET#2") != std::string::npos);
}

TEST_CASE("http faults: a kill during the client's last retries gives the slow replacement the whole lease",
          "[http]") {
  // r1 gets a 503 (the injected error at its COMMIT); the client's retry r2 is killed after its COMMIT, and
  // the replacement answers only 2 s later (tests/targets/http-slow-restart), past the lease counted from
  // before the kill. The lease counts again from the fault: the next retry gets the stored 201.
  const auto sched = ordersSchedule("http-slow-restart", {{{"op", "send"}, {"key", 1}}},
                                    {"error:before:COMMIT#1:40001", "after:COMMIT#2"});
  Result r = clean({"replay", sched, "--target", testTarget("http-slow-restart")});
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  std::map<int, std::string> outcomes;
  for (const auto& op : r.report["runs"][0]["history"])
    if (op["type"] == "response") outcomes[op["value"]["id"].get<int>()] = op["value"]["outcome"];
  CHECK(outcomes[2] == "reset");
  REQUIRE(outcomes.size() >= 3);
  CHECK(outcomes.rbegin()->second == "answered");
}

TEST_CASE("http faults: a server's queries before it is ready are set-up, never a fault point, in every replacement",
          "[http]") {
  // py-orders-startup-check queries the catalog before it listens, as Django's runserver checks its
  // migrations. after:SELECT#1 is the first SELECT of a request: the kill lands there (not on the start-up,
  // where the server would only die before serving), and the replacement's own start-up query is set-up too.
  Result r = clean({"run", "--target", testTarget("py-orders-startup-check"), "--scenario", "orders", "--crash",
                    "after:SELECT#1"});
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  int startups = 0, spawns = 0, kills = 0;
  for (const auto& op : r.report["runs"][0]["history"]) {
    if (op["type"] == "spawn") ++spawns;
    if (op["type"] == "fault") ++kills;
    if (op["type"] != "step" || op["value"]["server"] != "pg") continue;
    const std::string detail = op["value"]["detail"];
    if (detail.find("pg_catalog.pg_class") == std::string::npos) continue;
    ++startups;
    CHECK(op["value"].value("set_up", false));
  }
  CHECK(kills == 1);
  CHECK(spawns == 2);   // s1, and the replacement after the kill
  CHECK(startups == 2); // each one's start-up query
}

} // namespace http_faults_itest
