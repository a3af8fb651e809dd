/// `idemproof sweep` end to end: a kill before and after every step of the default wallet schedule.
#include "support.h"

#include <catch2/catch.hpp>

#include <set>

using namespace itest;

TEST_CASE("sweep: dedup-valkey loses a payment at an after:SET kill point") {
  Result r = idemproof({"sweep", "--target", target("dedup-valkey"), "--scenario", "wallet"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  CHECK(leftovers(lastTag()).empty());
  bool found = false;
  for (const auto& p : r.report["sweep"]["points"]) {
    std::string point = p["point"];
    if (point.rfind("after:SET#", 0) == 0 && p["verdict"] == "fail") {
      for (const auto& k : p["kinds"]) found = found || k == "lost";
    }
  }
  CHECK(found);
  // The lost payment of the after:SET#3 point: event 3 (300 of the decodable 12100).
  bool three = false;
  for (const auto& v : violations(r.report, "lost")) {
    if (v["run"] == "after:SET#3") {
      three = true;
      CHECK(v["expected"] == 12100);
      CHECK(v["observed"] == 11800);
      CHECK(v["events"] == nlohmann::json::array({3}));
      CHECK(v["kill_point"] == "after:SET#3");
    }
  }
  CHECK(three);
}

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
  Result r = idemproof({"sweep", "--target", target("simple"), "--scenario", "wallet"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  CHECK(!violations(r.report, "duplicate").empty());
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
