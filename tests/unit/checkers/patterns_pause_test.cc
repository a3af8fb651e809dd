// The anti-pattern a pause shows (checkers/patterns/paused_member_works.cc): a consumer stopped while it
// held an event wakes and applies it, after another consumer was handed the event and applied it. Histories
// written by hand, as in patterns_test.cc.
#include "check_util.h"

#include "checkers/patterns/patterns.h"

using namespace idem;
using namespace idem::testing;

namespace {

/// A look for the event's record, then the credit and the record (no unique key), in one transaction.
void lookThenCredit(HistoryBuilder& b, const std::string& proc, bool commit = true) {
  b.step(proc, "pg", "BEGIN");
  b.step(proc, "pg", "SELECT", "SELECT 1 FROM applied_events WHERE event_id = $1");
  b.step(proc, "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
  b.step(proc, "pg", "INSERT", "INSERT INTO applied_events (event_id) VALUES ($1)");
  if (commit) b.step(proc, "pg", "COMMIT");
}

/// The run's one duplicate.
Violation pauseDuplicateOf(const Scenario& s, const std::vector<Op>& ops) {
  auto rs = checkAll(s, ops);
  REQUIRE(merge(rs) == Verdict::Fail);
  for (const auto& v : result(rs, "invariant:balance").violations)
    if (v.kind == "duplicate") return v;
  FAIL("no duplicate");
  return {};
}

} // namespace

TEST_CASE("paused-member-works: c1 paused before its COMMIT, c2 claims and applies, c1 wakes and commits", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"pause:before:COMMIT#1"});
  b.initial(balances(0));
  auto e = sendWallet(b, {100, 300, 900, 2700, 8100}, {1});
  b.spawn("c1");
  const int64_t read = b.read("c1", "XREADGROUP", e);
  lookThenCredit(b, "c1", false);
  const int64_t fault = b.fault("c1", "pause:before:COMMIT#1");
  b.spawn("c2");
  const int64_t claim = b.read("c2", "XAUTOCLAIM", e);
  lookThenCredit(b, "c2");
  b.ack("c2", e);
  b.step("c1", "pg", "COMMIT"); // awake: its withheld COMMIT goes on
  b.ack("c1", e);
  b.finalOp(balances(200));
  const Violation v = pauseDuplicateOf(s, b.ops());
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "paused-member-works");
  CHECK(v.pattern->name == "a paused consumer wakes as a zombie");
  CHECK(v.pattern->explanation.find("c1 was paused at pause:before:COMMIT#1 while it held event 1") == 0);
  INFO(v.pattern->explanation);
  CHECK(v.pattern->explanation.find("c1 woke and applied it too (c1 COMMIT#2)") != std::string::npos);
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(fault));
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(read));
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(claim));
}

TEST_CASE("paused-member-works: the same steps after a hold are no paused consumer", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"hold:c1:before:COMMIT#1"});
  b.initial(balances(0));
  auto e = sendWallet(b, {100, 300, 900, 2700, 8100}, {1});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  lookThenCredit(b, "c1", false);
  b.fault("c1", "hold:c1:before:COMMIT#1");
  b.spawn("c2");
  b.read("c2", "XAUTOCLAIM", e);
  lookThenCredit(b, "c2");
  b.ack("c2", e);
  b.step("c1", "pg", "COMMIT");
  b.ack("c1", e);
  b.finalOp(balances(200));
  const Violation v = pauseDuplicateOf(s, b.ops());
  CHECK((!v.pattern || v.pattern->id != "paused-member-works"));
}

namespace {

/// c1 paused before its COMMIT by time (500 ms) with c2 started; `c2Moves`: c2 claims the entry while c1
/// sleeps (before the release note), else c2's first request comes after it.
std::vector<CheckResult> timedPause(bool c2Moves, bool secondConsumer = true) {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"pause:before:COMMIT#1"});
  b.initial(balances(0));
  auto e = sendWallet(b, {100, 300, 900, 2700, 8100}, {1});
  b.spawn("c1");
  if (secondConsumer) b.spawn("c2");
  b.read("c1", "XREADGROUP", e);
  lookThenCredit(b, "c1", false);
  b.fault("c1", "pause:before:COMMIT#1");
  if (c2Moves) b.read("c2", "XAUTOCLAIM", {});
  b.note("c1", "pause pause:before:COMMIT#1 released: 500 ms passed");
  b.step("c1", "pg", "COMMIT");
  b.ack("c1", e);
  if (secondConsumer && !c2Moves) b.read("c2", "XAUTOCLAIM", {});
  b.finalOp(balances(100));
  return checkAll(s, b.ops());
}

} // namespace

TEST_CASE("faults: a timed pause over before another consumer made a request is noted, the verdict kept", "[faults]") {
  const auto rs = timedPause(false);
  const auto& r = result(rs, "faults");
  CHECK(r.verdict == Verdict::Pass);
  REQUIRE(r.notes.size() == 1);
  CHECK_THAT(r.notes[0], Catch::Matchers::StartsWith("pause:before:COMMIT#1 stopped c1 and ended when 500 ms passed, "
                                                     "before any other consumer made a request"));
  CHECK_THAT(r.notes[0], Catch::Matchers::Contains("pause:before:COMMIT#1:cN:after:VERB#k"));
}

TEST_CASE("faults: no note when another consumer moved during the pause, or when the consumer was alone", "[faults]") {
  CHECK(result(timedPause(true), "faults").notes.empty());
  CHECK(result(timedPause(false, false), "faults").notes.empty());
}
