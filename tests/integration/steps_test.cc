/// Step names and kill points seen through the proxies, for consumers that use prepared statements
/// (libpqxx), the extended protocol (psycopg 3) and several connections.
#include "support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <vector>

using namespace itest;

namespace {

/// "VERB#k" of every step of process `p` in the first run of a report, in request order.
std::vector<std::string> stepsOf(const nlohmann::json& report, const std::string& p) {
  std::vector<std::pair<int64_t, std::string>> steps;
  for (const auto& op : report["runs"][0]["history"]) {
    if (op["type"] != "step" || op["process"] != p) continue;
    const auto& v = op["value"];
    steps.emplace_back(v["t_req_us"].get<int64_t>(), v["verb"].get<std::string>() + "#" + std::to_string(v["k"].get<int>()));
  }
  std::sort(steps.begin(), steps.end());
  std::vector<std::string> out;
  for (auto& s : steps) out.push_back(s.second);
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

} // namespace

TEST_CASE("prepared statements are named by the statement they execute, counted over the run") {
  Result r = idemproof({"run", "--target", (repo() / "targets/dedup-table").string(), "--crash", "after:COMMIT#2"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  auto c1 = stepsOf(r.report, "c1");
  auto c2 = stepsOf(r.report, "c2");
  // c1 prepares two statements, then per entry: BEGIN, INSERT, UPDATE, COMMIT, XACK; killed after COMMIT#2.
  CHECK(contains(c1, "PARSE#1"));
  CHECK(contains(c1, "PARSE#2"));
  CHECK(contains(c1, "INSERT#2"));
  CHECK(contains(c1, "UPDATE#2"));
  CHECK(contains(c1, "COMMIT#2"));
  CHECK(!contains(c1, "XACK#2"));
  // c2 continues the run's numbering: its first COMMIT is COMMIT#3.
  CHECK(contains(c2, "COMMIT#3"));
  CHECK(!contains(c2, "COMMIT#1"));
  bool killed = false;
  for (const auto& op : r.report["runs"][0]["history"])
    if (op["type"] == "fault") killed = op["value"]["fault"] == "after:COMMIT#2";
  CHECK(killed);
}

TEST_CASE("a psycopg 3 consumer is killed at exact steps through the proxies and recovers") {
  for (const char* point : {"after:COMMIT#2", "before:XACK#3", "after:INSERT#4"}) {
    Result r = idemproof({"run", "--target", (repo() / "tests/targets/py-dedup-table").string(), "--crash", point});
    INFO(point << ": " << r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.report["verdict"] == "pass");
    CHECK(leftovers(lastTag()).empty());
  }
}

TEST_CASE("simple applies a payment twice when killed after COMMIT and before XACK") {
  Result r = idemproof({"run", "--target", (repo() / "targets/simple").string(), "--crash", "after:COMMIT#3"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  auto dups = violations(r.report, "duplicate");
  REQUIRE(!dups.empty());
  // Two extra applications: the producer's retry of event 2, and event 3 redelivered after the kill. The
  // decodable amounts (100, 300, 900, 2700, 8100 on top for the retried event 2) name both.
  CHECK(dups[0]["observed"] == 12100 + 8100 + 300);
  CHECK(dups[0]["events"] == nlohmann::json::array({2, 3}));
}

TEST_CASE("a consumer that acknowledges and claims in Lua scripts: a sweep passes, an acknowledgement before the "
          "credit loses the event") {
  // redis-py's register_script: EVALSHA, SCRIPT LOAD on NOSCRIPT. What the scripts do to the stream is not
  // seen; their steps are `unseen`, and the claim script's reply carries the entries it claimed.
  Result sweep = clean({"sweep", "--target", testTarget("py-lua-dedup-table")});
  INFO(sweep.out << sweep.err);
  CHECK(sweep.status == 0);
  CHECK(sweep.report["sweep"]["not_fired"] == 0);
  // The same steps in every run: the scripts are flushed with the data, so each run loads them again.
  Result run = clean({"run", "--target", testTarget("py-lua-dedup-table")});
  INFO(run.out << run.err);
  CHECK(run.status == 0);
  bool unseen = false;
  for (const auto& op : run.report["runs"][0]["history"])
    unseen = unseen || (op["type"] == "step" && op["value"].value("unseen", false));
  CHECK(unseen);
  CHECK(stepsOf(run.report, "c1").at(2) == "EVALSHA#1"); // NOSCRIPT: loaded again in this run too
  // Marked seen and acknowledged in one script, then killed before the credit: event 1 lost, not stuck.
  Result lost = clean({"run", "--target", testTarget("py-lua-ack-first"), "--crash", "after:EVALSHA#4"});
  INFO(lost.out << lost.err);
  CHECK(lost.status == 1);
  REQUIRE(!lost.report["violations"].empty());
  CHECK(lost.report["violations"][0]["kind"] == "lost");
  CHECK(lost.report["violations"][0]["events"] == nlohmann::json::array({1}));
  // Its SCRIPT LOAD showed the body calling XACK, and EVALSHA#4 carried the entry's id: named.
  CHECK(lost.report["violations"][0]["pattern"]["id"] == "ack-before-effect");
}

TEST_CASE("tutorial Valkey consumers: a MULTI pipeline reads and acknowledges at EXEC, and XGROUP DELCONSUMER "
          "in a finally loses what it held") {
  // redis-py's default pipeline() queues XACK and XREADGROUP inside MULTI: both run at EXEC, whose reply
  // carries the entries (before, no read was seen and every run ran into the deadline, unknown). The other
  // deletes its own consumer name on the way out after an error: Valkey drops the entry it held.
  auto rs = cleanAll({{"run", "--target", testTarget("py-pipe-multi")},
                      {"run", "--target", testTarget("py-delconsumer-finally"), "--events", "1", "--crash",
                       "error:before:BEGIN#1"},
                      // An error at EXEC discards the transaction on the server too (EXECABORT): before, the
                      // server's connection stayed in MULTI and the run ran into its deadline, unknown.
                      {"run", "--target", testTarget("py-pipe-multi"), "--crash", "error:before:EXEC#2", "--deadline",
                       "30s"}});
  INFO(rs[0].out << rs[0].err);
  CHECK(rs[0].status == 0);
  bool execDelivered = false;
  for (const auto& op : rs[0].report["runs"][0]["history"])
    execDelivered = execDelivered || (op["type"] == "step" && op["value"]["verb"] == "EXEC" &&
                                      !op["value"].value("delivered", nlohmann::json::array()).empty());
  CHECK(execDelivered);
  INFO(rs[1].out << rs[1].err);
  CHECK(rs[1].status == 1);
  REQUIRE(!rs[1].report["violations"].empty());
  CHECK(rs[1].report["violations"][0]["kind"] == "lost");
  CHECK(rs[1].report["violations"][0]["pattern"]["id"] == "consumer-deleted-with-pending");
  INFO(rs[2].out << rs[2].err);
  CHECK(rs[2].status == 0);
  bool execAborted = false;
  for (const auto& op : rs[2].report["runs"][0]["history"])
    execAborted = execAborted || (op["type"] == "step" && op["value"]["verb"] == "EXEC" && op["value"]["k"] == 2 &&
                                  op["value"].value("error", false));
  CHECK(execAborted);
}
