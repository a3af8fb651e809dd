/// The race bugs: targets/check-then-act (and tests/targets/py-check-then-act, the same strategy
/// in Python) looks for the event's row first, then inserts one into a table with no unique key. One
/// consumer at a time it is right under every kill; two consumers holding one event at once both find no
/// row and both credit. dedup-table (INSERT ... ON CONFLICT on a primary key) is its correct counterpart.
///
/// The interleaving is forced by holds alone (no timing luck, no timing bound): every hold but one is
/// released at another process's point, and the one timed hold only makes time pass (30 ms > CLAIM_IDLE_MS,
/// a lower bound that a slow machine only lengthens):
///   hold:c1:before:BEGIN#1:30                  c1 has read the stream's entries (c2 can't read them
///                                              before its own claim, below) and waits 30 ms before its
///                                              first transaction: they are then idle past CLAIM_IDLE_MS;
///   hold:c2:before:XAUTOCLAIM#1:c1:before:COMMIT#1
///                                              c2's first claim waits until c1 is mid-transaction, at its
///                                              first COMMIT, and then takes every entry c1 holds, event 1
///                                              first;
///   hold:c1:before:COMMIT#1:c2:after:INSERT#1  c1's COMMIT waits until c2 has run its SELECT and INSERT for
///                                              event 1. check-then-act's INSERT waits on nothing (no key),
///                                              so c2 reaches that point: event 1 is credited twice.
///                                              dedup-table's INSERT waits on c1's uncommitted key, so the
///                                              harness releases c1 ("waits on a PostgreSQL lock") and c2's
///                                              insert then does nothing.
/// While c1 is held neither process is ever idle (a held request is work in flight), so no hold is
/// released for idleness. What the two do after event 1 (both work on the rest of the batch at once) is
/// not forced: only event 1's duplicate is asserted.
#include "support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

using namespace itest;

// A named namespace around this file's functions and cases: the integration tests are a unity build, and
// another file's anonymous functions (one is also called anyContains) share this translation unit.
namespace race_targets {

const std::vector<std::string> kRaceHolds{
    "--crash", "hold:c1:before:BEGIN#1:30", "--crash", "hold:c2:before:XAUTOCLAIM#1:c1:before:COMMIT#1",
    "--crash", "hold:c1:before:COMMIT#1:c2:after:INSERT#1"};

Result raceRun(const std::string& targetDir) {
  std::vector<std::string> args{"run", "--target", targetDir, "--consumers", "2"};
  args.insert(args.end(), kRaceHolds.begin(), kRaceHolds.end());
  return clean(args);
}

/// The notes of process `process` in the run's history.
std::vector<std::string> notes(const nlohmann::json& report, const std::string& process) {
  std::vector<std::string> out;
  for (const auto& op : report["runs"][0]["history"])
    if (op["type"] == "note" && op["process"] == process) out.push_back(op["value"]["message"]);
  return out;
}

bool anyContains(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

/// An XAUTOCLAIM of c2 delivered entries (the ones c1 held: its first claim, held until c1 is at COMMIT#1).
bool c2Claimed(const nlohmann::json& report) {
  for (const auto& op : report["runs"][0]["history"]) {
    const auto& v = op["value"];
    if (op["type"] == "step" && op["process"] == "c2" && v["verb"] == "XAUTOCLAIM" && v.contains("delivered") &&
        !v["delivered"].empty())
      return true;
  }
  return false;
}

/// Two consumers, the holds above: fails with event 1 applied twice, c1's COMMIT released by c2's INSERT.
void failsWithEventOneTwice(const std::string& targetDir) {
  Result r = raceRun(targetDir);
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  CHECK(r.report["verdict"] == "fail");
  CHECK(c2Claimed(r.report));
  auto c1 = notes(r.report, "c1");
  CHECK(anyContains(c1, "hold hold:c1:before:COMMIT#1:c2:after:INSERT#1 released: c2 reached"));
  CHECK(!anyContains(c1, "waits on a PostgreSQL lock"));
  auto dups = violations(r.report, "duplicate");
  REQUIRE(!dups.empty());
  std::vector<int> events = dups[0]["events"];
  CHECK(std::count(events.begin(), events.end(), 1) == 1);
  // Every kind found is a duplicate: nothing lost, nothing stuck, nothing crashed.
  for (const auto& v : r.report["violations"]) CHECK(v["kind"] == "duplicate");
}

TEST_CASE("race_targets: check-then-act passes a kill at every step of one consumer (sweep)") {
  // Two generated events and a producer retry (34 points): every step of an entry's work is killed before and
  // after, on a first delivery and on a duplicate, as on the default schedule's six entries.
  Result r = idemproof({"sweep", "--target", target("check-then-act"), "--scenario", "wallet", "--events", "2",
                        "--seed", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(leftovers(lastTag()).empty());
  const auto& points = r.report["sweep"]["points"];
  REQUIRE(points.size() >= 20);
  std::set<std::string> verbs;
  for (const auto& p : points) {
    CHECK(p["fired"] == true);
    CHECK(p["verdict"] == "pass");
    std::string point = p["point"];
    verbs.insert(point.substr(point.find(':') + 1, point.find('#') - point.find(':') - 1));
  }
  // Kills inside the transaction (between its SELECT and INSERT, INSERT and UPDATE) and after its COMMIT.
  for (const char* v : {"BEGIN", "SELECT", "INSERT", "UPDATE", "COMMIT", "XACK"}) CHECK(verbs.count(v) == 1);
}

TEST_CASE("race_targets: check-then-act applies an event twice when c2 claims it while c1 is mid-transaction, "
          "3 times out of 3", "[two-cores]") {
  for (int i = 0; i < 3; ++i) failsWithEventOneTwice(target("check-then-act"));
}

TEST_CASE("race_targets: dedup-table passes the same holds, its insert waiting on c1's key, 3 times out of 3", "[two-cores]") {
  for (int i = 0; i < 3; ++i) {
    Result r = raceRun(target("dedup-table"));
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(r.report["verdict"] == "pass");
    CHECK(c2Claimed(r.report));
    auto c1 = notes(r.report, "c1");
    CHECK(anyContains(c1, "hold hold:c1:before:COMMIT#1:c2:after:INSERT#1 released: another process waits on a "
                          "PostgreSQL lock"));
  }
}

TEST_CASE("race_targets: py-check-then-act applies an event twice under the same holds, 3 times out of 3", "[two-cores]") {
  for (int i = 0; i < 3; ++i) failsWithEventOneTwice(testTarget("py-check-then-act"));
}

} // namespace race_targets
