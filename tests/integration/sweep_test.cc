/// `idemproof sweep` end to end: a kill before and after every step of a wallet schedule.
#include "support.h"

#include <catch2/catch.hpp>

#include <set>

using namespace itest;

// dedup-valkey's sweep of the default schedule, losing event 3 at after:SET#3, is sweep_reduce_test.cc's
// exhaustive sweep end to end (one sweep proves both).

TEST_CASE("sweep: dedup-table passes at every kill point, each of which fired") {
  Result r = idemproof({"sweep", "--target", target("dedup-table"), "--scenario", "wallet"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  const auto& points = r.report["sweep"]["points"];
  REQUIRE(points.size() >= 20);
  std::set<std::string> verbs;
  for (const auto& p : points) {
    CHECK(p["fired"] == true);
    CHECK(p["verdict"] == "pass");
    std::string point = p["point"];
    verbs.insert(point.substr(point.find(':') + 1, point.find('#') - point.find(':') - 1));
  }
  for (const char* v : {"BEGIN", "INSERT", "UPDATE", "COMMIT", "XACK", "XREADGROUP"}) CHECK(verbs.count(v) == 1);
}

TEST_CASE("sweep: simple fails with duplicates") {
  // Two generated events and the retry of event 2 (--events 2): the retry it applies again is the same.
  Result r = idemproof({"sweep", "--target", target("simple"), "--scenario", "wallet", "--events", "2", "--seed", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  CHECK(!violations(r.report, "duplicate").empty());
  // Each failing fault's line names the anti-pattern behind it, as run and check do.
  CHECK(r.out.find("fail       duplicate — effect without dedup\n") != std::string::npos);
}

TEST_CASE("sweep: a sweep that ran no fault point is unknown, naming why, never a pass") {
  // Holds are swept by --interleave (two consumers): a plain sweep has no point that takes one.
  Result r = clean({"sweep", "--target", target("dedup-table"), "--scenario", "wallet", "--faults", "hold"});
  INFO(r.out << r.err);
  CHECK(r.status == 2);
  CHECK(r.report["verdict"] == "unknown");
  CHECK(r.report["sweep"]["points"].empty());
  CHECK(r.report["sweep"]["no_faults"].get<std::string>().find("takes a hold fault") != std::string::npos);
  CHECK(r.out.find("unknown: no fault ran") != std::string::npos);
}

TEST_CASE("sweep: a point its run did not reach runs again, and counts as fired when a later run reaches it") {
  // steps-vary sends one SELECT after its first COMMIT in odd-numbered runs only: the fault-free run (the
  // first) has it, and of the two kill points at it, run one after the other (--workers 1), one falls on an
  // even run. Its next two runs are one odd and one even: it fires in one of them.
  Result r = idemproof({"sweep", "--target", testTarget("steps-vary"), "--scenario", "wallet", "--events", "1",
                        "--workers", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.report["sweep"]["not_fired"] == 0);
  int again = 0, atSelect = 0;
  for (const auto& p : r.report["sweep"]["points"]) {
    CHECK(p["fired"] == true);
    CHECK(p["verdict"] == "pass");
    const std::string point = p["point"];
    if (point.find(":SELECT#1") == std::string::npos) {
      CHECK(p["runs"] == 1);
      continue;
    }
    ++atSelect;
    again += p["runs"].get<int>() > 1;
  }
  CHECK(atSelect == 2);
  CHECK(again == 1);
  CHECK(r.out.find("of the point)") != std::string::npos);
  CHECK(r.out.find("runs again of points not reached") != std::string::npos);
}

TEST_CASE("compare: a class point its run did not reach runs again, and its cell is judged by the run that reached it") {
  // steps-vary's SELECT after its first COMMIT comes in odd-numbered runs only: with one worker, the kill
  // points at it that fall on an even run are not reached, and run again (up to 3 runs in all; which of
  // them reach it depends on how many others run again between: each cell passes or, reached by none, is n/a).
  Result r = idemproof({"compare", "--target", testTarget("steps-vary"), "--scenario", "wallet", "--events", "2", "--runs",
                        "0", "--per-class", "0", "--faults", "kill", "--workers", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("runs again of points not reached") != std::string::npos);
  int atSelect = 0, firedAtSelect = 0;
  for (const auto& c : r.report["compare"]["cells"]) {
    INFO(c["class"]);
    const std::string cls = c["class"];
    if (cls.rfind("kill:", 0) != 0) continue;
    CHECK((c["verdict"] == "pass" || c["verdict"] == "n/a"));
    if (cls.find("SELECT") == std::string::npos) continue;
    ++atSelect;
    firedAtSelect += c["faults_fired"].get<int>();
  }
  CHECK(atSelect == 2);
  CHECK(firedAtSelect > 0);
}
