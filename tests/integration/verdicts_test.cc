/// Verdicts a CI gate can stake on (docs/verdicts.md), end to end on embedded servers with consumers in
/// Python (psycopg 3, redis-py) and C++: a coincidence is never a pass, slow is never stuck, an unknown is
/// never hidden.
#include "support.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <future>

using namespace itest;

TEST_CASE("acknowledge-first without dedup, killed after its fourth XACK: run names a duplicate and a loss") {
  Result r = idemproof({"run", "--target", testTarget("py-ack-first"), "--crash", "after:XACK#4"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  CHECK(r.report["verdict"] == "fail");
  duplicateTwoLostFour(r.report, "run");
  CHECK(r.report["schedule"].contains("values")); // the report says the amounts were chosen
  CHECK(leftovers(r.tag).empty());
}

TEST_CASE("acknowledge-first with the scenario's equal amounts: unknown with the ambiguity named, never pass") {
  Result r = idemproof({"run", "--target", testTarget("py-ack-first"), "--crash", "after:XACK#4", "--scenario-values"});
  INFO(r.out << r.err);
  CHECK(r.status == 2);
  CHECK(r.report["verdict"] == "unknown");
  CHECK(r.err.find("balance of w1 is 25000 as expected, but") != std::string::npos);
  CHECK(r.err.find("the amounts cannot tell") != std::string::npos);
}

TEST_CASE("acknowledge-first: sweep names both at after:XACK#4, and check finds it") {
  // Shard 3 of 8 of the sweep: its points stride by 8 over the trace's points (before and after XREADGROUP#2,
  // then XACK, BEGIN, UPDATE, COMMIT of each entry), so this slice is the kill right after each XACK#1..6,
  // after:XACK#4 among them, and the baseline; the other seven slices judge their points alike.
  Result s = idemproof({"sweep", "--target", testTarget("py-ack-first"), "--shard", "3/8"});
  INFO(s.out << s.err);
  REQUIRE(s.status == 1);
  duplicateTwoLostFour(s.report, "after:XACK#4");

  // Schedules of at most 2 events: the search fails at once and shrinks in a few Python runs.
  Result c = idemproof({"check", "--target", testTarget("py-ack-first"), "--seed", "3", "--runs", "20", "--max-events", "2"});
  INFO(c.out << c.err);
  REQUIRE(c.status == 1);
  CHECK(c.report["verdict"] == "fail");

  // The schedule file of that sweep point replays to the same verdict (the replay command of check).
  nlohmann::json schedule;
  for (const auto& run : s.report["runs"])
    if (run["id"] == "after:XACK#4") schedule = run["schedule"];
  REQUIRE(schedule.is_object());
  auto file = s.reportDir / "after-XACK4.json";
  std::ofstream(file) << schedule.dump();
  Result p = idemproof({"replay", file.string(), "--target", testTarget("py-ack-first")});
  INFO(p.out << p.err);
  REQUIRE(p.status == 1);
  duplicateTwoLostFour(p.report, "");
}

TEST_CASE("a NOACK reader passes when nothing goes wrong and loses what it read when killed at the read") {
  // XREADGROUP … NOACK: the group counts each entry acknowledged as it delivers it, so nothing is ever
  // pending. Its run settles once the credits are in (never waiting on entries it will never XACK, never
  // ended while the read's reply is on its way), and a kill as the reply arrives loses what it carried.
  auto rs = cleanAll({{"run", "--target", testTarget("py-noack")},
                      {"run", "--target", testTarget("py-noack"), "--crash", "after:XREADGROUP#1"}});
  {
    INFO(rs[0].out << rs[0].err);
    CHECK(rs[0].status == 0);
    CHECK(rs[0].report["verdict"] == "pass");
    CHECK(rs[0].report["runs"][0]["history"].back()["value"]["end"] == "settled");
  }
  INFO(rs[1].out << rs[1].err);
  REQUIRE(rs[1].status == 1);
  auto lost = violations(rs[1].report, "lost");
  REQUIRE(lost.size() == 1);
  CHECK(lost[0]["events"] == nlohmann::json::array({1, 2, 3, 4, 5}));
  CHECK(lost[0]["pattern"]["id"] == "ack-before-effect");
  CHECK(lost[0]["message"].get<std::string>().find("acknowledged by c1's XREADGROUP#1 before any delivery") !=
        std::string::npos);
}

TEST_CASE("slow is not stuck: 5 s per event with and without a kill, and 5 s to start, pass with default flags") {
  // The three runs at once: each starts its own servers, and the consumer mostly sleeps. Two generated events
  // and a producer retry (3 entries): each 5 s silence is the same whatever the number of events; killed after
  // its first COMMIT, the replacement claims all three and spends 5 s on each. The slow start: no work per
  // event, 5 s before the first request, killed after its third COMMIT so that the replacement starts slowly too.
  auto plain = std::async(std::launch::async, [] {
    return idemproof({"run", "--target", testTarget("py-slow"), "--events", "2", "--seed", "1"});
  });
  auto killed = std::async(std::launch::async, [] {
    return idemproof({"run", "--target", testTarget("py-slow"), "--events", "2", "--seed", "1", "--crash",
                      "after:COMMIT#1"});
  });
  auto slowStart = std::async(std::launch::async, [] {
    return idemproof({"run", "--target", testTarget("py-slow"), "--crash", "after:COMMIT#3"}, 0, true,
                     {{"SLOW_EVENT_MS", "0"}, {"SLOW_START_MS", "5000"}});
  });
  for (Result r : {plain.get(), killed.get(), slowStart.get()}) {
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.report["verdict"] == "pass");
    CHECK(leftovers(r.tag).empty());
  }
}

TEST_CASE("busy at the deadline is unknown with the reason, never stuck") {
  Result r = idemproof({"run", "--target", testTarget("py-slow"), "--deadline", "5s"}, 0, true,
                       {{"SLOW_EVENT_MS", "60000"}});
  INFO(r.out << r.err);
  CHECK(r.status == 2);
  CHECK(r.report["verdict"] == "unknown");
  CHECK(violations(r.report, "stuck").empty());
  CHECK(r.err.find("deadline of 5000 ms reached with c1 silent for") != std::string::npos);
  CHECK(r.err.find("holding") != std::string::npos);
  // Silent for most of the deadline (it sleeps 60 s per event): slow or hung, the advice names both.
  CHECK(r.err.find("raise --deadline if c1 works that long between requests; if it is hung") != std::string::npos);
}

TEST_CASE("a consumer re-reading an entry it never acknowledges is stuck, proven after a restart") {
  Result r = idemproof({"run", "--target", testTarget("skip-no-ack")});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  auto stuck = violations(r.report, "stuck");
  REQUIRE(!stuck.empty());
  CHECK(stuck[0]["events"] == nlohmann::json::array({2}));
}

TEST_CASE("a target that exits 0 at once cannot start: exit 2, not stuck") {
  Result r = idemproof({"run", "--target", testTarget("exits-0")});
  INFO(r.out << r.err);
  CHECK(r.status == 2);
  CHECK(r.report["verdict"] == "error");
  CHECK(violations(r.report, "stuck").empty());
  CHECK(r.err.find("cannot start: c1 exited (exit 0) before any step of its work reached a server") != std::string::npos);
  // The log it points at is the copy in the report folder, which outlives the run.
  CHECK(r.err.find((r.reportDir / "logs" / "run" / "c1.log").string()) != std::string::npos);
  CHECK(std::filesystem::exists(r.reportDir / "logs" / "run" / "c1.log"));
}

TEST_CASE("a connection the PostgreSQL proxy can't decode: unknown, not pass") {
  Result r = idemproof({"run", "--target", testTarget("py-pg-garbage"), "--crash", "after:COMMIT#2"});
  INFO(r.out << r.err);
  CHECK(r.status == 2);
  CHECK(r.report["verdict"] == "unknown");
  CHECK(r.err.find("could not be decoded") != std::string::npos);
  bool recorded = false;
  for (const auto& op : r.report["runs"][0]["history"])
    recorded = recorded || (op["type"] == "opaque" && op["value"]["server"] == "pg");
  CHECK(recorded);
}

TEST_CASE("compare: a target with an unknown cell makes the command exit 2") {
  // Kill classes only: one unknown cell is the point, not the classes it falls in.
  Result r = idemproof({"compare", "--target", target("dedup-table"), "--target", testTarget("py-pg-garbage"),
                        "--runs", "0", "--per-class", "1", "--faults", "kill"});
  INFO(r.out << r.err);
  CHECK(r.status == 2);
  int unknownCells = 0;
  for (const auto& c : r.report["compare"]["cells"])
    if (c["target"] == "py-pg-garbage" && c["unknown"].get<int>() > 0) ++unknownCells;
  CHECK(unknownCells > 0);
  CHECK(r.out.find("could not be judged") != std::string::npos);
}
