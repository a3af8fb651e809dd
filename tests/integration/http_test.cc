/// HTTP endpoints that take an Idempotency-Key, judged through the real binary against the
/// reference servers of targets/http-* (C++, Boost.Beast) and tests/targets/py-orders (Flask + psycopg, the
/// Stripe-like policy of tests/scenarios/orders-409.json), on embedded PostgreSQL.
#include "support.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <set>

using namespace itest;

namespace http_itest {

std::set<std::string> kindsOf(const nlohmann::json& report) {
  std::set<std::string> out;
  for (const auto& v : report["violations"]) out.insert(v["kind"].get<std::string>());
  return out;
}

/// A schedule file of the orders scenario with two payloads and these requests.
std::string scheduleFile(const std::string& name, const nlohmann::json& client, const std::string& scenario = "orders") {
  nlohmann::json s = nlohmann::json::parse(R"({"version": 2, "events": [
      {"n": 1, "fields": {"customer": "alice", "sku": "sku-1", "qty": "2", "amount": "4500"}},
      {"n": 2, "fields": {"customer": "bob", "sku": "sku-2", "qty": "1", "amount": "1200"}}]})");
  s["scenario"] = scenario;
  s["client"] = client;
  s["faults"] = nlohmann::json::array();
  auto path = scratchPath("http-" + name + ".json");
  std::ofstream(path) << s.dump(2);
  return path.string();
}

const std::string kOrders409 = (repo() / "tests" / "scenarios" / "orders-409.json").string();

bool concurrent(const nlohmann::json& schedule) {
  for (const auto& c : schedule["client"])
    if (c["op"] == "burst" || c.value("wait", "") == "timeout") return true;
  return false;
}

TEST_CASE("http: check finds naive's double order at once, and check-then-insert passes requests one after another",
          "[http]") {
  Result naive = clean({"check", "--target", target("http-naive"), "--scenario", "orders", "--seed", "1", "--runs", "20"});
  INFO(naive.out << naive.err);
  CHECK(naive.status == 1);
  CHECK(kindsOf(naive.report).count("double-effect") == 1);
  // Requests one after another, each answered before the next: check-then-insert's SELECT sees the key.
  Result serial = clean({"replay", scheduleFile("serial", {{{"op", "send"}, {"key", 1}}, {{"op", "send"}, {"key", 2}},
                                                          {{"op", "send"}, {"key", 1}}}),
                         "--target", target("http-check-then-insert")});
  INFO(serial.out << serial.err);
  CHECK(serial.status == 0);
}

// Alone: the race needs both requests in flight at once.
TEST_CASE("http: check finds check-then-insert's double order only with concurrent requests", "[http][two-cores]") {
  Result cti = clean({"check", "--target", target("http-check-then-insert"), "--scenario", "orders", "--seed", "1",
                      "--runs", "40"});
  INFO(cti.out << cti.err);
  REQUIRE(cti.status == 1);
  CHECK(kindsOf(cti.report).count("double-effect") == 1);
  const auto& cx = cti.report["check"]["counterexample"];
  CHECK(concurrent(cx["schedule"])); // a burst, or a retry while the first is in flight
  CHECK(cx["verdicts"].back() == "fail");
  // Shrunk to the key's requests alone, its steps show the race: named, with its fix.
  auto doubled = violations(cti.report, "double-effect");
  REQUIRE(doubled.size() == 1);
  CHECK(doubled[0]["pattern"]["id"] == "http-check-then-insert");
}

TEST_CASE("http: key-outside-tx leaves a key in progress for good after COMMIT, the correct target passes the kill "
          "sweep and generated schedules", "[http]") {
  Result stuck = clean({"run", "--target", target("http-key-outside-tx"), "--scenario", "orders", "--crash", "after:COMMIT#1"});
  INFO(stuck.out << stuck.err);
  CHECK(stuck.status == 1);
  auto v = violations(stuck.report, "stuck-key");
  REQUIRE(v.size() == 1);
  CHECK(v[0]["invariant"] == "http:liveness");
  CHECK(v[0]["kill_point"] == "after:COMMIT#1");
  // The same kill on the correct target: the crash rolled everything back, and the retry executes once.
  Result same = clean({"run", "--target", target("http-correct"), "--scenario", "orders", "--crash", "after:COMMIT#1"});
  INFO(same.out << same.err);
  CHECK(same.status == 0);

  Result sweep = clean({"sweep", "--target", target("http-correct"), "--scenario", "orders"});
  INFO(sweep.out << sweep.err);
  CHECK(sweep.status == 0);
  CHECK(sweep.out.find("0 not fired") != std::string::npos);
  Result check = clean({"check", "--target", target("http-correct"), "--scenario", "orders", "--seed", "3", "--runs", "20"});
  INFO(check.out << check.err);
  CHECK(check.status == 0);
  CHECK(check.report["check"]["passed"] == 20);
}

TEST_CASE("http: no-hash replays another payload's answer, and the declared policy is honoured both ways", "[http]") {
  const nlohmann::json requests = {{{"op", "send"}, {"key", 1}}, {{"op", "send"}, {"key", 1}, {"body", 2}}};
  const std::string mismatch = scheduleFile("mismatch", requests);
  Result noHash = clean({"replay", mismatch, "--target", target("http-no-hash")});
  INFO(noHash.out << noHash.err);
  CHECK(noHash.status == 1);
  auto v = violations(noHash.report, "mismatch-accepted");
  REQUIRE(v.size() == 1);
  CHECK(v[0]["message"].get<std::string>().find("the answer of r1") != std::string::npos);
  // http-correct answers a mismatch 422, py-orders 409: each passes under its own policy and fails under the other.
  // Under orders-409 the key is opaque (unquoted), which http-correct's sf-string parser rejects: it answers
  // 400 to the fresh key too, which is no declared answer to it (unexpected-status).
  struct Case {
    std::string target, scenario;
    int status;
    std::set<std::string> kinds;
  };
  for (const auto& c : std::vector<Case>{{target("http-correct"), "orders", 0, {}},
                                         {testTarget("http-correct-409"), kOrders409, 1, {"mismatch-status", "unexpected-status"}},
                                         {testTarget("py-orders"), kOrders409, 0, {}},
                                         {testTarget("py-orders"), "orders", 1, {"mismatch-status"}}}) {
    std::string file = c.scenario == "orders" ? mismatch : scheduleFile("mismatch-409", requests, "orders-409");
    Result r = clean({"replay", file, "--target", c.target, "--scenario", c.scenario});
    INFO(c.target << " under " << c.scenario << ": " << r.out << r.err);
    CHECK(r.status == c.status);
    CHECK(kindsOf(r.report) == c.kinds);
  }
}

/// A schedule file with three payloads of `scenario`, these requests and faults.
std::string policyFile(const std::string& name, const nlohmann::json& client, const std::string& scenario,
                       const nlohmann::json& faults = nlohmann::json::array()) {
  nlohmann::json s = nlohmann::json::parse(R"({"version": 2, "events": [
      {"n": 1, "fields": {"customer": "alice", "sku": "sku-1", "qty": "2", "amount": "4500"}},
      {"n": 2, "fields": {"customer": "bob", "sku": "sku-2", "qty": "1", "amount": "1200"}},
      {"n": 3, "fields": {"customer": "carol", "sku": "sku-3", "qty": "3", "amount": "900"}}]})");
  s["scenario"] = scenario;
  s["client"] = client;
  s["faults"] = faults;
  auto path = scratchPath("http-" + name + ".json");
  std::ofstream(path) << s.dump(2);
  return path.string();
}

TEST_CASE("http: form bodies pass on the reference server, and replay_5xx, in_flight wait and the retention are "
          "judged both ways", "[http]") {
  const std::string form = (repo() / "tests" / "scenarios" / "orders-form.json").string();
  const std::string stored = (repo() / "tests" / "scenarios" / "orders-stored.json").string();
  // A reordered retry is the same payload as pairs: replayed; another payload under the key: 422.
  Result f = clean({"replay", policyFile("form", {{{"op", "send"}, {"key", 1}}, {{"op", "send"}, {"key", 1}, {"reordered", true}},
                                                  {{"op", "send"}, {"key", 1}, {"body", 2}}}, "orders-form"),
                    "--target", testTarget("http-correct-plain"), "--scenario", form});
  INFO(f.out << f.err);
  CHECK(f.status == 0);
  // Key 3 retried 500 ms later (within the 1000 ms retention); key 1 retried while its first request is held
  // at its COMMIT (in flight); key 2's order refused by PostgreSQL (a 5xx), then retried.
  const nlohmann::json client = {{{"op", "send"}, {"key", 3}}, {{"op", "send"}, {"key", 3}, {"aged_ms", 500}},
                                 {{"op", "send"}, {"key", 1}, {"wait", "timeout"}}, {{"op", "send"}, {"key", 1}},
                                 {{"op", "send"}, {"key", 2}}, {{"op", "send"}, {"key", 2}}};
  const std::string file = policyFile("stored", client, "orders-stored", {"error:before:INSERT#5"});
  Result ok = clean({"replay", file, "--target", testTarget("http-correct-stored"), "--scenario", stored});
  INFO(ok.out << ok.err);
  CHECK(ok.status == 0);
  // http-correct stores no 5xx and answers 409 at once: both are violations of what orders-stored declares.
  Result plain = clean({"replay", file, "--target", testTarget("http-correct-plain"), "--scenario", stored});
  INFO(plain.out << plain.err);
  CHECK(plain.status == 1);
  CHECK(kindsOf(plain.report) == std::set<std::string>{"in-flight-rejected", "executed-after-5xx"});
  // Keys kept 200 ms where 1000 are declared: the retry 500 ms later executes again.
  const std::string aged = policyFile("short", {{{"op", "send"}, {"key", 3}}, {{"op", "send"}, {"key", 3}, {"aged_ms", 500}}},
                                      "orders-stored");
  Result shortKeys = clean({"replay", aged, "--target", testTarget("http-correct-short-keys"), "--scenario", stored});
  INFO(shortKeys.out << shortKeys.err);
  CHECK(shortKeys.status == 1);
  CHECK(kindsOf(shortKeys.report).count("forgotten-within-retention") == 1);
  // The same in simulated time: a server declaring dedup_ttl_ms 200 has its key row pruned as 500 ms pass.
  Result pruned = clean({"replay", aged, "--target", testTarget("http-correct-pruned"), "--scenario", stored});
  INFO(pruned.out << pruned.err);
  CHECK(pruned.status == 1);
  CHECK(kindsOf(pruned.report).count("forgotten-within-retention") == 1);
}

TEST_CASE("http: every client behaviour against the Python server (compare on its own policy)", "[http]") {
  Result r = clean({"compare", "--target", testTarget("py-orders"), "--scenario", kOrders409, "--runs", "1",
                    "--per-class", "1"});
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  std::set<std::string> classes;
  for (const auto& c : r.report["compare"]["cells"]) {
    classes.insert(c["class"].get<std::string>());
    CHECK(c["verdict"] == "pass");
  }
  for (const char* cls : {"http:retry", "http:timeout-inflight", "http:timeout-after", "http:burst", "http:mismatch",
                          "http:mismatch-inflight", "http:mismatch-race", "http:missing-key", "http:cut",
                          "http:after-retention"})
    CHECK(classes.count(cls) == 1);
}

TEST_CASE("http: no-hash fails check on every seed from 1 to 5, a race found first reduced to requests one after "
          "another before replays could call it flaky", "[http][slow]") {
  for (const char* seed : {"1", "2", "3", "4", "5"}) {
    Result r = clean({"check", "--target", target("http-no-hash"), "--scenario", "orders", "--seed", seed, "--runs", "40"});
    INFO("seed " << seed << ": " << r.out << r.err);
    CHECK(r.status == 1);
    CHECK(kindsOf(r.report).count("mismatch-accepted") == 1);
    const auto& cx = r.report["check"]["counterexample"];
    REQUIRE(cx.is_object());
    CHECK(cx["flaky"] == false);
    for (const auto& v : cx["verdicts"]) CHECK(v == "fail");
    // A first failure whose replays disagree (a burst with another payload, a mismatch sent while the first
    // request is in flight) is reported through its deterministic shape: the requests one after another.
    bool agreed = true;
    for (const auto& v : cx["found"]["verdicts"]) agreed = agreed && v == "fail";
    if (!agreed) CHECK(cx["reduced"].is_string());
    if (cx["reduced"].is_string()) CHECK(!concurrent(cx["schedule"]));
  }
}

} // namespace http_itest
