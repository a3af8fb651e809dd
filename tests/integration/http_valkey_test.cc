/// Keys guarded by a lock in Valkey, through the real binaries: http-valkey-lock orders twice when a
/// statement of its transaction is delayed past the declared lease while the client retries, and
/// http-valkey-fenced does not; a server whose last step before its answer is a Valkey command (the lock's
/// release, the answer's SET … XX) or a statement in autocommit is held there when its client times out, and
/// its answer comes late.
#include "support.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <map>

using namespace itest;

namespace http_valkey_itest {


/// The outcome of each request of the run, by its id (r1: 1).
std::map<int, std::string> outcomes(const Result& r) {
  std::map<int, std::string> out;
  for (const auto& op : r.report["runs"][0]["history"])
    if (op["type"] == "response") out[op["value"]["id"].get<int>()] = op["value"]["outcome"];
  return out;
}

bool noted(const Result& r, const std::string& text) {
  for (const auto& op : r.report["runs"][0]["history"])
    if (op["type"] == "note" && op["value"].dump().find(text) != std::string::npos) return true;
  return false;
}

std::set<std::string> kindsOf(const nlohmann::json& report) {
  std::set<std::string> out;
  for (const auto& v : report["violations"]) out.insert(v["kind"].get<std::string>());
  return out;
}

/// orders whose default schedule is one request its client gives up on.
const std::string kOrdersTimeout = (repo() / "tests" / "scenarios" / "orders-timeout.json").string();

const nlohmann::json kTimedOut = {{{"op", "send"}, {"key", 1}, {"wait", "timeout"}}};

TEST_CASE("http valkey: a delay past the lease doubles the lock's order, the fenced one replays", "[http]") {
  // orders declares lease_ms 1000: the client's retries at the end take the expired lock while COMMIT#1 waits.
  const auto past = ordersSchedule("http-valkey-past", kTimedOut, {"delay:before:COMMIT#1:1500"});
  Result lock = clean({"replay", past, "--target", target("http-valkey-lock")});
  INFO(lock.out << lock.err);
  CHECK(lock.status == 1);
  const auto doubled = violations(lock.report, "double-effect");
  REQUIRE(doubled.size() == 1);
  // Named from the steps: the same lock taken twice, the lease's time gone, the first holder's transaction
  // committed after the second took it.
  CHECK(doubled[0]["pattern"]["id"] == "http-lease-without-fence");
  Result fenced = clean({"replay", past, "--target", target("http-valkey-fenced")});
  INFO(fenced.out << fenced.err);
  CHECK(fenced.status == 0);
  // Within the lease the lock holds: the retries get 409 until the first request's answer is stored.
  Result within = clean({"replay", ordersSchedule("http-valkey-within", kTimedOut, {"delay:before:COMMIT#1:300"}), "--target",
                         target("http-valkey-lock")});
  INFO(within.out << within.err);
  CHECK(within.status == 0);
}

TEST_CASE("http valkey: a timed-out request is held at its last step, a Valkey command or autocommit, answers late",
          "[http]") {
  const auto twice = ordersSchedule("http-valkey-held", {{{"op", "send"}, {"key", 1}, {"wait", "timeout"}}, {{"op", "send"}, {"key", 1}}}, nlohmann::json::array());
  // The lock's release (EVAL) is its last step: the order is committed, the answer stored, the request in flight.
  Result lock = clean({"replay", twice, "--target", target("http-valkey-lock")});
  INFO(lock.out << lock.err);
  CHECK(lock.status == 0);
  CHECK(noted(lock, "r1's last step before its answer in the fault-free rehearsal: EVAL (valkey)"));
  auto o = outcomes(lock);
  REQUIRE(o.size() >= 2);
  CHECK(o[1] == "late");
  CHECK(o[2] == "answered");
  // The answer's SET … XX in Valkey is py-orders-valkey's last step: held there, the retry finds the key in
  // progress (409), and r1's answer comes late.
  Result py = clean({"replay", twice, "--target", testTarget("py-orders-valkey")});
  INFO(py.out << py.err);
  CHECK(py.status == 0);
  CHECK(noted(py, "r1's last step before its answer in the fault-free rehearsal: SET (valkey), the 2nd SET"));
  o = outcomes(py);
  REQUIRE(o.size() >= 2);
  CHECK(o[1] == "late");
  CHECK(o[2] == "answered");  // A last write in autocommit (no BEGIN, no COMMIT): the UPDATE that completes the key is held; the retry
  // finds the key in progress (409), and r1's answer comes late.
  Result autocommit = clean({"replay", twice, "--target", testTarget("http-key-outside-tx-autocommit")});
  INFO(autocommit.out << autocommit.err);
  CHECK(autocommit.status == 0);
  CHECK(noted(autocommit, "r1's last step before its answer in the fault-free rehearsal: UPDATE (pg), the 2nd UPDATE"));
  o = outcomes(autocommit);
  REQUIRE(o.size() >= 2);
  CHECK(o[1] == "late");
  CHECK(o[2] == "answered");
}

TEST_CASE("http valkey: a slice of the sweep with every kind passes the fenced target and finds the lock's "
          "double order", "[http]") {
  // orders-timeout: one request whose client gives up; every kind at a slice of the points (the whole sweep
  // runs for minutes: each delay past the lease lasts 1.5 s).
  Result fenced = clean({"sweep", "--scenario", kOrdersTimeout, "--target", testTarget("http-valkey-fenced-timeout"),
                         "--faults", "kill,drop,delay,error,restart,pause", "--shard", "3/24"});
  INFO(fenced.out << fenced.err);
  CHECK(fenced.status == 0);
  // The delay past the lease before INSERT#1 (the order) is in this slice: point 8 of 18, fault 17 of 36.
  Result lock = clean({"sweep", "--scenario", kOrdersTimeout, "--target", testTarget("http-valkey-lock-timeout"),
                       "--faults", "delay", "--shard", "1/16"});
  INFO(lock.out << lock.err);
  CHECK(lock.status == 1);
  CHECK(kindsOf(lock.report).count("double-effect") == 1);
}

TEST_CASE("http valkey: check with every kind finds the lock's double order in its class sweep, the fenced passes",
          "[http]") {
  const std::vector<std::string> every{"--scenario", "orders", "--faults", "kill,drop,delay,error,restart,pause",
                                       "--seed", "1", "--runs", "10", "--replays", "1"};
  std::vector<std::string> args{"check", "--target", target("http-valkey-lock")};
  args.insert(args.end(), every.begin(), every.end());
  Result lock = clean(args);
  INFO(lock.out << lock.err);
  CHECK(lock.status == 1);
  CHECK(kindsOf(lock.report).count("double-effect") == 1);
  args = {"check", "--target", target("http-valkey-fenced")};
  args.insert(args.end(), every.begin(), every.end());
  Result fenced = clean(args);
  INFO(fenced.out << fenced.err);
  CHECK(fenced.status == 0);
}

} // namespace http_valkey_itest
