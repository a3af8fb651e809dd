// The four checkers of poison events on written histories of scenarios/wallet-poison.json: event 3 is
// poison (amount -500, max_deliveries 3, dead letters in the table dead_letters).
#include "check_util.h"

#include <catch2/catch.hpp>

using namespace idem;
using namespace idem::testing;
using nlohmann::json;

namespace poison_checks {

const Scenario& scenario() {
  static const Scenario s = builtin("wallet-poison");
  return s;
}

/// How the written consumer treats poison event 3.
struct Run {
  int poisonDeliveries = 1;   ///< reads that hand entry 3 to c1
  int deadLetters = 1;        ///< rows for event 3 in dead_letters
  bool ackPoison = true;      ///< it acknowledges the poison entry at the end
  bool applyPoison = false;   ///< it credits the -500
  bool ackEvent4 = true;      ///< event 4 acknowledged (else left pending: blocked)
  std::string end = "";       ///< "" as the builder decides, or "limit"
  bool deadLetterRead = true; ///< the final op says where the dead letters were read
};

/// Events 1, 2, 4 to w1 (100, 300, 900), event 5 to w2 (100), event 3 poison; stream 1, 2, 3, 4, 5, 2.
std::vector<Op> poisonRun(const Run& r) {
  HistoryBuilder b(scenario());
  b.initial(balances(0));
  const std::map<int, std::map<std::string, std::string>> fields = {
      {1, {{"wallet", "w1"}, {"amount", "100"}}}, {2, {{"wallet", "w1"}, {"amount", "300"}}},
      {3, {{"wallet", "w1"}, {"amount", "-500"}}}, {4, {{"wallet", "w1"}, {"amount", "900"}}},
      {5, {{"wallet", "w2"}, {"amount", "100"}}}};
  std::vector<std::string> e;
  for (int n : {1, 2, 3, 4, 5, 2}) e.push_back(b.send(n, fields.at(n)));
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  int64_t w1 = 0;
  for (size_t i : {0, 1, 3, 4, 5}) {
    if (i == 3 && !r.ackEvent4) continue;
    if (i != 5) b.step("c1", "pg", "COMMIT");
    if (i == 0) w1 += 100;
    if (i == 1) w1 += 300;
    if (i == 3) w1 += 900;
    b.ack("c1", {e[i]});
  }
  for (int d = 1; d < r.poisonDeliveries; ++d) b.read("c1", "XAUTOCLAIM", {e[2]});
  if (r.applyPoison) w1 -= 500;
  for (int d = 0; d < r.deadLetters; ++d) b.step("c1", "pg", "INSERT", "INSERT INTO dead_letters ...");
  if (r.ackPoison) b.ack("c1", {e[2]});
  json pending = json::array();
  if (!r.ackPoison) pending.push_back({{"entry", e[2]}, {"consumer", "c1"}, {"deliveries", r.poisonDeliveries}});
  if (!r.ackEvent4) pending.push_back({{"entry", e[3]}, {"consumer", "c1"}, {"deliveries", 1}});
  b.finalOp(balances(w1, 100), pending, json::array(), r.end);
  auto ops = b.ops();
  auto& fin = finalOf(ops);
  if (r.deadLetterRead) fin.deadLetterWhere = "table dead_letters";
  for (int d = 0; d < r.deadLetters; ++d) fin.deadLetters.push_back({std::to_string(d + 1), b.eventId(3)});
  return ops;
}

CheckResult check(const Run& r, const std::string& checker) { return result(checkAll(poison_checks::scenario(), poisonRun(r)), checker); }

} // namespace poison_checks

using poison_checks::Run;
using poison_checks::poisonRun;

TEST_CASE("poison: a dead-lettered poison event passes all four checks and the invariant", "[checkers][poison]") {
  auto rs = checkAll(poison_checks::scenario(), poisonRun({}));
  for (const char* c : {"poison:dead-lettered", "poison:bounded", "poison:no-block", "poison:not-applied",
                        "invariant:balance", "broker"}) {
    INFO(c << ": " << result(rs, c).error);
    CHECK(result(rs, c).verdict == Verdict::Pass);
  }
  CHECK(merge(rs) == Verdict::Pass);
}

TEST_CASE("poison:dead-lettered: dropped without a trace, twice, at a limit", "[checkers][poison]") {
  auto dropped = poison_checks::check({.deadLetters = 0}, "poison:dead-lettered");
  REQUIRE(dropped.verdict == Verdict::Fail);
  CHECK(dropped.violations.at(0).kind == "not-dead-lettered");
  CHECK(dropped.violations.at(0).events == std::vector<int>{3});
  CHECK(dropped.violations.at(0).message ==
        "poison event 3 is not in the table dead_letters: acknowledged without a dead letter (dropped without a trace)");
  REQUIRE(dropped.violations.at(0).pattern);
  CHECK(dropped.violations.at(0).pattern->id == "poison-dropped");
  auto twice = poison_checks::check({.deadLetters = 2}, "poison:dead-lettered");
  REQUIRE(twice.verdict == Verdict::Fail);
  CHECK(twice.violations.at(0).kind == "dead-lettered-twice");
  CHECK(twice.violations.at(0).message == "poison event 3 is in the table dead_letters twice (1, 2)");
  // The consumer may still have been about to write it.
  CHECK(poison_checks::check({.deadLetters = 0, .ackPoison = false, .end = "limit"}, "poison:dead-lettered").verdict == Verdict::Unknown);
  CHECK(poison_checks::check({.deadLetterRead = false}, "poison:dead-lettered").verdict == Verdict::Unknown);
}

TEST_CASE("poison:bounded: deliveries beyond max_deliveries fail, up to it pass", "[checkers][poison]") {
  CHECK(poison_checks::check({.poisonDeliveries = 3}, "poison:bounded").verdict == Verdict::Pass);
  auto forever = poison_checks::check({.poisonDeliveries = 7, .deadLetters = 0, .ackPoison = false}, "poison:bounded");
  REQUIRE(forever.verdict == Verdict::Fail);
  CHECK(forever.violations.at(0).kind == "unbounded");
  CHECK(forever.violations.at(0).message ==
        "poison event 3 (entry 1-2) delivered 7 times, more than max_deliveries (3), never acknowledged: "
        "redelivered without end");
  REQUIRE(forever.violations.at(0).pattern);
  CHECK(forever.violations.at(0).pattern->id == "poison-retried-forever");
}

TEST_CASE("poison:no-block: an event left behind the poison one fails", "[checkers][poison]") {
  auto blocked = poison_checks::check({.ackEvent4 = false}, "poison:no-block");
  REQUIRE(blocked.verdict == Verdict::Fail);
  bool named = false;
  for (const auto& v : blocked.violations)
    named = named || (v.kind == "blocked" && v.message == "event 4 was never acknowledged behind poison event 3");
  CHECK(named);
}

TEST_CASE("poison:not-applied: the poison amount in the balance fails, naming the event", "[checkers][poison]") {
  auto applied = poison_checks::check({.applyPoison = true}, "poison:not-applied");
  REQUIRE(applied.verdict == Verdict::Fail);
  CHECK(applied.violations.at(0).kind == "poison-applied");
  CHECK(applied.violations.at(0).events == std::vector<int>{3});
  CHECK(applied.violations.at(0).message == "poison event 3 applied once; balance of w1 is 800, expected 1300");
  CHECK(poison_checks::check({}, "poison:not-applied").verdict == Verdict::Pass);
}

TEST_CASE("poison: scenarios without poison get none of its checks", "[checkers][poison]") {
  auto rs = checkAll(builtin("wallet"), simpleWalletRun());
  for (const auto& r : rs) CHECK(r.checker.rfind("poison:", 0) == std::string::npos);
}
