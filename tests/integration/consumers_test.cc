/// Several live consumers (`--consumers N`, a schedule's "consumers"): each its own process and CONSUMER
/// name, faults named per process (cN:before|after:VERB#k), kills and restarts per process. The race
/// classes and holds build on this.
#include "support.h"

#include <catch2/catch.hpp>

#include <set>

using namespace itest;

namespace {

std::set<std::string> spawned(const nlohmann::json& report) {
  std::set<std::string> out;
  for (const auto& op : report["runs"][0]["history"])
    if (op["type"] == "spawn") out.insert(op["process"].get<std::string>());
  return out;
}

} // namespace

// Which live consumer reads an entry first is up to timing (a hold decides it: races_test.cc): these tests
// only use steps every process reaches for sure (its first read) or the run-wide count.
TEST_CASE("consumers: two live consumers, a kill at the run's second COMMIT, the rest recovered by the others") {
  Result r = clean({"run", "--target", target("dedup-table"), "--consumers", "2", "--crash", "after:COMMIT#2"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.report["schedule"]["consumers"] == 2);
  CHECK(spawned(r.report) == std::set<std::string>{"c1", "c2", "c3"}); // c3 replaces the killed one

  Result naive = clean({"run", "--target", target("simple"), "--consumers", "2", "--crash", "after:COMMIT#2"});
  INFO(naive.out << naive.err);
  CHECK(naive.status == 1);
  CHECK(!violations(naive.report, "duplicate").empty());
}

TEST_CASE("consumers: cN:VERB#k fires on process cN: c2 killed before its own first read") {
  Result r = clean({"run", "--target", target("dedup-table"), "--consumers", "2", "--crash", "c2:before:XREADGROUP#1"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  bool onC2 = false;
  for (const auto& op : r.report["runs"][0]["history"])
    if (op["type"] == "fault") onC2 = op["process"] == "c2" && op["value"]["fault"] == "c2:before:XREADGROUP#1";
  CHECK(onC2);
  CHECK(spawned(r.report) == std::set<std::string>{"c1", "c2", "c3"});
}

TEST_CASE("consumers: a fault on a process that never reaches its step is unknown and says so") {
  Result r = clean({"run", "--target", target("dedup-table"), "--consumers", "2", "--crash", "c2:after:COMMIT#9"});
  INFO(r.out << r.err);
  CHECK(r.status == 2);
  CHECK(r.err.find("kill point c2:after:COMMIT#9 never fired: c2 made ") != std::string::npos);
}

TEST_CASE("consumers: claim while busy, forced by two holds, replays the same 3 times out of 3", "[two-cores]") {
  // c2's first '>' read waits until c1's has returned (c1 takes the stream); c1 is held at its first COMMIT
  // past CLAIM_IDLE_MS, so c2 claims every entry c1 holds and works on them. Then c2's write waits on a
  // row lock of c1's open transaction: the hold can't be met, and is released (noted).
  const std::vector<std::string> holds{"--crash", "hold:c2:before:XREADGROUP#2:c1:after:XREADGROUP#2", "--crash",
                                       "hold:c1:before:COMMIT#1:1000"};
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> args{"run", "--target", target("dedup-table"), "--consumers", "2"};
    args.insert(args.end(), holds.begin(), holds.end());
    Result r = clean(args);
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    bool claimed = false, lockRelease = false;
    for (const auto& op : r.report["runs"][0]["history"]) {
      const auto& v = op["value"];
      if (op["type"] == "step" && op["process"] == "c2" && v["verb"] == "XAUTOCLAIM" && v.contains("delivered"))
        claimed = claimed || !v["delivered"].empty();
      if (op["type"] == "note" && op["process"] == "c1")
        lockRelease = lockRelease || v["message"].get<std::string>().find("waits on a PostgreSQL lock") != std::string::npos;
    }
    CHECK(claimed);
    CHECK(lockRelease);

    std::vector<std::string> naiveArgs{"run", "--target", target("simple"), "--consumers", "2"};
    naiveArgs.insert(naiveArgs.end(), holds.begin(), holds.end());
    Result naive = clean(naiveArgs);
    INFO(naive.out << naive.err);
    CHECK(naive.status == 1);
    auto dups = violations(naive.report, "duplicate");
    REQUIRE(!dups.empty());
    CHECK(dups[0]["message"].get<std::string>().find("c1 held at hold:c1:before:COMMIT#1:1000") != std::string::npos);
  }
}

TEST_CASE("consumers: a hold whose point is never reached never hangs the run, and its release is noted", "[two-cores]") {
  Result r = clean({"run", "--target", target("dedup-table"), "--consumers", "2", "--crash",
                    "hold:c1:before:XREADGROUP#2:c2:after:COMMIT#9"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0); // never hangs: c2 takes every entry and makes 6 COMMITs, then idles
  bool released = false;
  for (const auto& op : r.report["runs"][0]["history"])
    if (op["type"] == "note")
      released = released || op["value"]["message"].get<std::string>().find(
                                 "hold hold:c1:before:XREADGROUP#2:c2:after:COMMIT#9 released: ") != std::string::npos;
  CHECK(released);
}
