/// Replicas of an HTTP server (docs/http-contract.md, "Replicas"), through the real binary: requests, a
/// retry and a split burst sent to replicas the schedule names, a kill of one replica while the other
/// serves, a hold of one replica until the other passes its COMMIT, check drawing 1-3 replicas with every
/// fault kind, the Flask target (tests/targets/py-orders) with two replicas, and a session lock an error left
/// held, which the client's last look at every replica finds (tests/targets/node-orders-session-lock).
#include "support.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <set>

using namespace itest;

namespace http_replicas_itest {

/// A schedule file of `scenario` with two payloads, `replicas` replicas, these requests and these faults.
std::string scheduleFile(const std::string& name, int replicas, const nlohmann::json& client,
                         const nlohmann::json& faults = nlohmann::json::array(), const std::string& scenario = "orders") {
  nlohmann::json s = nlohmann::json::parse(R"({"version": 2, "events": [
      {"n": 1, "fields": {"customer": "alice", "sku": "sku-1", "qty": "2", "amount": "4500"}},
      {"n": 2, "fields": {"customer": "bob", "sku": "sku-2", "qty": "1", "amount": "1200"}}]})");
  s["scenario"] = scenario;
  s["replicas"] = replicas;
  s["client"] = client;
  s["faults"] = faults;
  auto path = scratchPath("http-replicas-" + name + ".json");
  std::ofstream(path) << s.dump(2);
  return path.string();
}

const nlohmann::json& historyOf(const Result& r) { return r.report["runs"][0]["history"]; }

/// The processes the client wrote its requests to, in order.
std::vector<std::string> requestServers(const Result& r) {
  std::vector<std::string> out;
  for (const auto& op : historyOf(r))
    if (op["type"] == "request") out.push_back(op["value"]["server"]);
  return out;
}

/// The history index of `process`'s first step of `verb`, or -1.
long firstStep(const Result& r, const std::string& process, const std::string& verb) {
  for (const auto& op : historyOf(r))
    if (op["type"] == "step" && op["process"] == process && op["value"]["verb"] == verb) return op["index"].get<long>();
  return -1;
}

std::set<std::string> kindsOf(const nlohmann::json& report) {
  std::set<std::string> out;
  for (const auto& v : report["violations"]) out.insert(v["kind"].get<std::string>());
  return out;
}

TEST_CASE("http replicas: requests go where the schedule says, a killed replica is replaced, a hold waits for s2",
          "[http]") {
  const nlohmann::json send1 = {{"op", "send"}, {"key", 1}};
  nlohmann::json to2 = send1;
  to2["replica"] = 2;
  nlohmann::json send2to2 = {{"op", "send"}, {"key", 2}, {"replica", 2}};
  nlohmann::json send2 = {{"op", "send"}, {"key", 2}};
  // s2 dies at its first COMMIT (key 1 replayed); s3 takes its replica: key 2 goes to s3, its retry to s1.
  Result killed = clean({"replay", scheduleFile("kill", 2, {send1, to2, send2to2, send2}, {"kill:s2:after:COMMIT#1"}),
                         "--target", target("http-correct")});
  INFO(killed.out << killed.err);
  CHECK(killed.status == 0);
  const auto servers = requestServers(killed);
  REQUIRE(servers.size() >= 4);
  CHECK(std::vector<std::string>(servers.begin(), servers.begin() + 4) == std::vector<std::string>{"s1", "s2", "s3", "s1"});
  bool replaced = false;
  for (const auto& op : historyOf(killed))
    if (op["type"] == "spawn" && op["process"] == "s3") replaced = op["value"]["consumer"] == "s2";
  CHECK(replaced); // s3 serves replica 2
  CHECK(firstStep(killed, "s2", "COMMIT") >= 0);

  // s1 held before its COMMIT while the client goes on: s2 commits key 2 first, then s1 goes on.
  Result held = clean({"replay", scheduleFile("hold", 2, {send1, send2to2}, {"hold:s1:before:COMMIT#1:s2:after:COMMIT#1"}),
                       "--target", target("http-correct")});
  INFO(held.out << held.err);
  CHECK(held.status == 0);
  const long s1Commit = firstStep(held, "s1", "COMMIT"), s2Commit = firstStep(held, "s2", "COMMIT");
  REQUIRE(s1Commit >= 0);
  REQUIRE(s2Commit >= 0);
  CHECK(s2Commit < s1Commit);

  // The same hold after check-then-insert's SELECT: both replicas find key 1 unused and both insert.
  Result race = clean({"replay", scheduleFile("race", 2, {send1, to2}, {"hold:s1:after:SELECT#1:s2:after:COMMIT#1"}),
                       "--target", target("http-check-then-insert")});
  INFO(race.out << race.err);
  CHECK(race.status == 1);
  CHECK(kindsOf(race.report).count("double-effect") == 1);

  // One replica: a hold has no second process to hold against; a replica beyond the schedule's is refused.
  Result refused = idemproof({"replay", scheduleFile("refused", 1, nlohmann::json::array({send1}), {"hold:s1:before:COMMIT#1"}), "--target",
                              target("http-correct")});
  INFO(refused.out << refused.err);
  CHECK(refused.status == 2);
  CHECK(refused.err.find("a hold needs a second server process") != std::string::npos);
  Result flag = idemproof({"run", "--target", target("http-correct"), "--scenario", "orders", "--replicas", "4"});
  INFO(flag.out << flag.err);
  CHECK(flag.status == 2);
  CHECK(flag.err.find("--replicas") != std::string::npos);
}

TEST_CASE("http replicas: a burst split across two replicas of check-then-insert is a double effect, shrunk to "
          "two replicas", "[http]") {
  // No hold orders the two copies: both replicas must SELECT before either commits, which timing decides (a
  // loaded machine may run one replica's whole transaction first). Each try is a whole run; up to five.
  Result split;
  for (int attempt = 0; attempt < 5 && split.status != 1; ++attempt)
    split = clean({"replay", scheduleFile("split", 2, {{{"op", "burst"}, {"key", 1}, {"copies", 2}, {"split", true}}}),
                   "--target", target("http-check-then-insert")});
  INFO(split.out << split.err);
  CHECK(split.status == 1);
  CHECK(kindsOf(split.report).count("double-effect") == 1);
  const auto servers = requestServers(split); // the burst's copies, then the client's last look at each replica
  REQUIRE(servers.size() >= 2);
  CHECK(std::vector<std::string>(servers.begin(), servers.begin() + 2) == std::vector<std::string>{"s1", "s2"});
  CHECK(firstStep(split, "s1", "INSERT") >= 0);
  CHECK(firstStep(split, "s2", "INSERT") >= 0);

  Result cx = clean({"check", "--target", target("http-check-then-insert"), "--scenario", "orders", "--replicas", "2",
                     "--seed", "4", "--runs", "5"});
  INFO(cx.out << cx.err);
  REQUIRE(cx.status == 1);
  CHECK(kindsOf(cx.report).count("double-effect") == 1);
  const auto& s = cx.report["check"]["counterexample"]["schedule"];
  CHECK(s["replicas"] == 2);
  REQUIRE(s["client"].size() == 1);
  CHECK(s["client"][0]["op"] == "burst");
  CHECK(cx.out.find("\"replicas\"") == std::string::npos); // the file carries it: the replay command needs no flag
}

TEST_CASE("http replicas: correct passes check with every fault kind and 1-3 replicas, py-orders with two", "[http]") {
  Result check = clean({"check", "--target", target("http-correct"), "--scenario", "orders", "--seed", "9", "--runs", "8",
                        "--no-class-sweep", "--faults", "kill,drop,delay,error,restart,pause,hold"});
  INFO(check.out << check.err);
  CHECK(check.status == 0);
  CHECK(check.report["check"]["passed"] == 8);
  CHECK(check.out.find("1..3 server replicas") != std::string::npos);
  CHECK(check.out.find("hold: ") != std::string::npos); // holds between replicas were drawn and fired

  const std::string orders409 = (repo() / "tests" / "scenarios" / "orders-409.json").string();
  nlohmann::json client = {{{"op", "send"}, {"key", 1}},
                           {{"op", "send"}, {"key", 1}, {"replica", 2}},
                           {{"op", "burst"}, {"key", 2}, {"copies", 4}, {"split", true}},
                           {{"op", "send"}, {"key", 2}, {"replica", 2}}};
  Result py = clean({"replay", scheduleFile("py", 2, client, {"kill:s2:after:COMMIT#1"}, "orders-409"), "--target",
                     testTarget("py-orders"), "--scenario", orders409});
  INFO(py.out << py.err);
  CHECK(py.status == 0);
  Result run = clean({"run", "--target", testTarget("py-orders"), "--scenario", orders409, "--replicas", "2"});
  INFO(run.out << run.err);
  CHECK(run.status == 0);
}

TEST_CASE("http replicas: a session lock an error path kept is refused by the other replica at the client's "
          "last look", "[http]") {
  // node-postgres, a session-level pg_try_advisory_lock unlocked after each COMMIT only: the COMMIT's error
  // skips the unlock, the connection goes back to the pool holding the lock. The retry on s1 takes it again
  // (re-entrant) and completes; the client's last look sends the completed key to each replica, and s2 is
  // refused it.
  const nlohmann::json send1 = nlohmann::json::array({{{"op", "send"}, {"key", 1}}});
  const std::string file = scheduleFile("session-lock", 2, send1, {"error:s1:before:COMMIT#1:40001"});
  Result leak = clean({"replay", file, "--target", testTarget("node-orders-session-lock")});
  INFO(leak.out << leak.err);
  CHECK(leak.status == 1);
  REQUIRE(kindsOf(leak.report).count("replay-mismatch") == 1);
  for (const auto& v : leak.report["violations"])
    if (v["kind"] == "replay-mismatch") CHECK(v["pattern"]["id"] == "http-session-lock-left");
  // The retry on s1 completes; the look at s1 replays, the one at s2 is refused.
  const auto servers = requestServers(leak);
  REQUIRE(servers.size() >= 2);
  CHECK(std::vector<std::string>(servers.end() - 2, servers.end()) == std::vector<std::string>{"s1", "s2"});
  // pg_advisory_lock, which waits: s2's look waits on the lock until the client gives up.
  Result wait = clean({"replay", file, "--target", testTarget("node-orders-blocking-lock")});
  INFO(wait.out << wait.err);
  CHECK(wait.status == 1);
  REQUIRE(kindsOf(wait.report).count("replay-mismatch") == 1);
  for (const auto& v : wait.report["violations"])
    if (v["kind"] == "replay-mismatch") {
      CHECK(v["pattern"]["id"] == "http-session-lock-left");
      CHECK(v["observed"].get<std::string>().rfind("no answer in ", 0) == 0);
    }
  // Unlocked in a finally block: the same schedule passes.
  Result fixed = clean({"replay", file, "--target", testTarget("node-orders-session-lock-finally")});
  INFO(fixed.out << fixed.err);
  CHECK(fixed.status == 0);
  // check finds it with two replicas and error faults, and its counterexample fails every replay.
  Result cx = clean({"check", "--target", testTarget("node-orders-session-lock"), "--scenario", "orders", "--replicas",
                     "2", "--faults", "error", "--seed", "3", "--runs", "5", "--no-class-sweep"});
  INFO(cx.out << cx.err);
  CHECK(cx.status == 1);
  CHECK(cx.out.find("pattern: a session lock left held after an error") != std::string::npos);
}

TEST_CASE("http replicas: a retry the server holds on a lock left held is given up mid-run, and its key was stuck",
          "[http]") {
  // pg_advisory_lock left held on s1's pooled session by the COMMIT's error: the retry on s2 waits on it. The
  // pool closes that idle session after 10 s, and the key completes later; the client gave up on the retry
  // after the lease and 5 s more, with nothing of the harness's meanwhile.
  const nlohmann::json client = {{{"op", "send"}, {"key", 1}}, {{"op", "send"}, {"key", 1}, {"replica", 2}},
                                 {{"op", "send"}, {"key", 2}}};
  const std::string file = scheduleFile("blocking-mid-run", 2, client, {"error:s1:before:COMMIT#1:40001"});
  Result r = clean({"replay", file, "--target", testTarget("node-orders-blocking-lock")});
  INFO(r.out << r.err);
  CHECK(r.status == 1);
  REQUIRE(kindsOf(r.report).count("stuck-key") == 1);
  for (const auto& v : r.report["violations"])
    if (v["kind"] == "stuck-key") {
      CHECK(v["pattern"]["id"] == "http-session-lock-left");
      CHECK(v["message"].get<std::string>().find("r2 (to s2) got no answer to key 1") != std::string::npos);
    }
  bool gaveUp = false;
  for (const auto& op : historyOf(r))
    if (op["type"] == "response" && op["value"]["id"] == 2) gaveUp = op["value"]["outcome"] == "timeout";
  CHECK(gaveUp);
  // Unlocked in a finally block: the same schedule passes.
  Result fixed = clean({"replay", file, "--target", testTarget("node-orders-session-lock-finally")});
  INFO(fixed.out << fixed.err);
  CHECK(fixed.status == 0);
}

TEST_CASE("http replicas: with one replica, the look at a key while another look holds a pooled connection "
          "meets a session lock an error path kept", "[http]") {
  // One replica: the retries reuse the pool's one idle session, which re-enters the lock it leaked. The look
  // at key 1 while key 2's look is held before its first SELECT takes another session, and is refused.
  const nlohmann::json client = {{{"op", "send"}, {"key", 1}}, {{"op", "send"}, {"key", 2}}, {{"op", "send"}, {"key", 1}}};
  const std::string file = scheduleFile("one-replica", 1, client, {"error:before:COMMIT#1:40001"});
  Result leak = clean({"replay", file, "--target", testTarget("node-orders-session-lock")});
  INFO(leak.out << leak.err);
  CHECK(leak.status == 1);
  REQUIRE(kindsOf(leak.report).count("replay-mismatch") == 1);
  for (const auto& v : leak.report["violations"])
    if (v["kind"] == "replay-mismatch") {
      CHECK(v["pattern"]["id"] == "http-session-lock-left");
      CHECK(v["observed"].get<std::string>().rfind("409", 0) == 0);
    }
  bool held = false;
  for (const auto& op : historyOf(leak))
    if (op["type"] == "note" && op["value"]["message"].get<std::string>().find("so that key 1's look takes another") !=
                                    std::string::npos)
      held = true;
  CHECK(held);
  Result fixed = clean({"replay", file, "--target", testTarget("node-orders-session-lock-finally")});
  INFO(fixed.out << fixed.err);
  CHECK(fixed.status == 0);
  // The unlock through pool.query, on another connection than the lock's: refused with no fault at all.
  Result astray = clean({"run", "--target", testTarget("node-orders-unlock-elsewhere"), "--scenario", "orders"});
  INFO(astray.out << astray.err);
  CHECK(astray.status == 1);
  REQUIRE(kindsOf(astray.report).count("replay-mismatch") == 1);
  for (const auto& v : astray.report["violations"])
    CHECK(v["pattern"]["id"] == "http-unlock-on-other-connection");
}

TEST_CASE("http replicas: the last look sends a key first sent longer ago than a short retention as after it",
          "[http]") {
  // http-correct keeping its keys 200 ms, on orders-stored declaring a retention of 200 ms: a key the
  // client looks at again later may be forgotten and executed anew, which is right.
  nlohmann::json sc = nlohmann::json::parse(std::ifstream(repo() / "tests" / "scenarios" / "orders-stored.json"));
  sc["http"]["policy"]["retention_ms"] = 200;
  const auto file = scratchPath("orders-stored-200.json");
  std::ofstream(file) << sc.dump(2);
  Result r = clean({"run", "--target", testTarget("http-correct-short-keys"), "--scenario", file.string(), "--replicas", "2"});
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  int looks = 0;
  for (const auto& op : historyOf(r))
    if (op["type"] == "request" && op["value"]["role"] == "settle") {
      ++looks;
      CHECK(op["value"].value("after_retention", false));
    }
  CHECK(looks >= 2);
}

} // namespace http_replicas_itest
