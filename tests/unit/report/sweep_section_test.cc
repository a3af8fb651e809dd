// The "sweep" section of sweep --interleave as a typed value (report/sweep_section.h, InterleaveGrid): a
// recorded section comes back equal through from_json and its JSON text unchanged, a plain sweep has no
// grid, and a mistyped or missing member or a verdict that is none does not read.
#include "report/sweep_section.h"

#include "fixtures.h"

#include <catch2/catch.hpp>

using namespace idem;
using namespace idem::testing;
using json = nlohmann::json;

namespace {

/// The sweep section of sweep --interleave, recorded from the check-then-act target (its runs left out).
json interleaveSweep() { return loadInput("interleave-check-then-act.report.json").at("sweep"); }

} // namespace

TEST_CASE("interleave grid: a recorded sweep section comes back equal, its JSON text unchanged") {
  const json j = interleaveSweep();
  const SweepSection s = j.get<SweepSection>();
  REQUIRE(s.interleave);
  CHECK(json(s).dump() == j.dump());
  CHECK(json(*s.interleave).get<InterleaveGrid>() == *s.interleave);
  const InterleaveGrid& g = *s.interleave;
  CHECK(g.consumers == 2);
  CHECK(g.failed == s.failed);
  CHECK(g.notFired == s.notFired);
  REQUIRE(!g.rows.empty());
  CHECK(g.rows[0].hold == "c1:before:XREADGROUP#2");
  REQUIRE(!g.rows[0].cells.empty());
  CHECK(g.rows[0].cells.back().until == "idle");
  CHECK(g.rows[0].cells[0].verdict == Verdict::Fail);
  CHECK(g.rows[0].cells[0].kinds == std::set<std::string>{"duplicate"});
  // Only the members sweep --interleave writes: none of a plain sweep's counts.
  CHECK(j.size() == 7);
  CHECK(s.points.empty());
  CHECK(s.faultKinds == std::vector<std::string>{"hold"});
}

TEST_CASE("interleave grid: a plain sweep has none, and writes no member for it") {
  const json plain = loadInput("sweep-dedup-valkey.report.json").at("sweep");
  const SweepSection s = plain.get<SweepSection>();
  CHECK(!s.interleave);
  CHECK(!json(s).contains("interleave"));
  CHECK(json(s).contains("trace_points")); // a plain sweep's counts, which sweep --interleave has not
}

TEST_CASE("interleave grid: a mistyped or missing member, or a verdict that is none, does not read") {
  const json good = interleaveSweep();
  for (const char* pointer : {"/interleave/rows", "/interleave/failed", "/interleave/reduction", "/interleave/rows/0/hold",
                              "/interleave/rows/0/cells", "/interleave/rows/0/cells/0/fired",
                              "/interleave/rows/0/cells/0/kinds", "/interleave/rows/1/role"}) {
    json j = good;
    j[json::json_pointer(pointer)] = json{{"x", 1}};
    CAPTURE(pointer);
    CHECK_THROWS_AS(j.get<SweepSection>(), json::exception);
  }
  for (const char* pointer : {"/interleave/rows", "/interleave/rows/0/cells/0/point", "/interleave/rows/0/cells/0/fired"}) {
    CAPTURE(pointer);
    CHECK_THROWS_AS(without(good, pointer).get<SweepSection>(), json::exception);
  }
  json j = good;
  j["interleave"]["rows"][0]["cells"][0]["verdict"] = "maybe";
  CHECK_THROWS_AS(j.get<SweepSection>(), std::invalid_argument);
  j = good;
  j["interleave"] = nullptr; // null reads as none
  CHECK(!j.get<SweepSection>().interleave);
}
