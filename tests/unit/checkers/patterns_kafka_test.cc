// The anti-patterns on Kafka (checkers/patterns/): the one that only a consumer group shows
// (revoked_member_works.cc), a member the group dropped in the middle of its batch that keeps applying what
// it held while the member that took its partition applies the same records again; and ack-before-effect and
// effect-without-dedup told in offsets. Histories written by hand, as in patterns_test.cc.
#include "patterns_util.h"

using namespace idem;
using namespace idem::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

/// The run's one duplicate, classified.
Violation onlyDuplicateOf(const Scenario& s, const std::vector<Op>& ops) {
  auto rs = checkAll(s, ops);
  REQUIRE(merge(rs) == Verdict::Fail);
  for (const auto& v : result(rs, "invariant:balance").violations)
    if (v.kind == "duplicate") return v;
  FAIL("no duplicate");
  return {};
}

/// A check, then the mark and the credit in one transaction (the credit whatever the mark did).
void checkThenCredit(HistoryBuilder& b, const std::string& proc) {
  b.step(proc, "pg", "SELECT", "SELECT 1 FROM processed_messages WHERE event_id = $1");
  b.step(proc, "pg", "BEGIN");
  b.step(proc, "pg", "INSERT", "INSERT INTO processed_messages(event_id) VALUES ($1) ON CONFLICT DO NOTHING");
  b.step(proc, "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
  b.step(proc, "pg", "COMMIT");
}

/// Credits each of `entries` and after each commits its offset: an offset commit names every record below
/// its position (`passed`, which grows with each).
void creditCommitting(HistoryBuilder& b, const std::string& proc, const std::vector<std::string>& entries,
                      std::vector<std::string>& passed) {
  for (const auto& entry : entries) {
    credit(b, proc, entry, false);
    passed.push_back(entry);
    b.brokerStep(proc, "kafka", "COMMIT_OFFSET", {}, passed);
  }
}

/// c1 fetches every entry of `e`, applies the first two committing their offsets, commits the third's effect
/// and is killed at after:COMMIT#3; c2 fetches the rest again and applies each, committing its offset.
/// Returns the kill's op and c2's FETCH.
std::pair<int64_t, int64_t> killedBeforeThirdOffset(HistoryBuilder& b, const std::vector<std::string>& e) {
  b.spawn("c1");
  b.brokerStep("c1", "kafka", "FETCH", e);
  std::vector<std::string> passed;
  creditCommitting(b, "c1", {e[0], e[1]}, passed);
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE");
  b.step("c1", "pg", "COMMIT", "COMMIT", "killed-after");
  const int64_t kill = b.kill("c1", "after:COMMIT#3");
  b.spawn("c2");
  const std::vector<std::string> rest(e.begin() + 2, e.end());
  const int64_t again = b.brokerStep("c2", "kafka", "FETCH", rest);
  creditCommitting(b, "c2", rest, passed);
  return {kill, again};
}

} // namespace

TEST_CASE("revoked-member-works: dropped mid-batch, the old and the new member both apply", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"rebalance:after:SELECT#2"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  const int64_t fetch = b.brokerStep("c1", "kafka", "FETCH", e);
  checkThenCredit(b, "c1");
  b.step("c1", "pg", "SELECT", "SELECT 1 FROM processed_messages WHERE event_id = $1");
  const int64_t fault = b.fault("c1", "rebalance:after:SELECT#2");
  b.spawn("c2");
  const int64_t again = b.brokerStep("c2", "kafka", "FETCH", {e[1]});
  checkThenCredit(b, "c2");
  b.brokerStep("c2", "kafka", "COMMIT_OFFSET", {}, {e[0], e[1]});
  // c1's step goes on: it credits event 2 as its check told it.
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "INSERT", "INSERT INTO processed_messages(event_id) VALUES ($1) ON CONFLICT DO NOTHING");
  b.step("c1", "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
  b.step("c1", "pg", "COMMIT");
  b.finalOp(balances(100 + 300 + 300));
  const Violation v = onlyDuplicateOf(s, b.ops());
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "revoked-member-works");
  CHECK(v.pattern->name == "a revoked member keeps working");
  CHECK(v.pattern->explanation == "the group dropped c1 at rebalance:after:SELECT#2 while it held event 2 (FETCH#1) "
                                  "and gave its partition to c2, which read it again from the last committed offset "
                                  "(FETCH#2) and applied it (c2 COMMIT#2); c1 went on with its batch and applied it "
                                  "too (c1 COMMIT#3)");
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(fault));
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(fetch));
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(again));
  CHECK_THAT(v.pattern->fix, Catch::Matchers::Contains("commit in the revocation callback"));
}

TEST_CASE("revoked-member-works: without a rebalance the same duplicate is no revoked member", "[patterns]") {
  // The same steps, but c1 was killed, not dropped: what it had applied before is the other patterns' case.
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"after:COMMIT#2"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  b.brokerStep("c1", "kafka", "FETCH", e);
  checkThenCredit(b, "c1");
  checkThenCredit(b, "c1");
  b.kill("c1", "after:COMMIT#2");
  b.spawn("c2");
  b.brokerStep("c2", "kafka", "FETCH", {e[1]});
  checkThenCredit(b, "c2");
  b.brokerStep("c2", "kafka", "COMMIT_OFFSET", {}, {e[0], e[1]});
  b.finalOp(balances(100 + 300 + 300));
  const Violation v = onlyDuplicateOf(s, b.ops());
  CHECK((!v.pattern || v.pattern->id != "revoked-member-works"));
}

TEST_CASE("ack-before-effect on Kafka: an offset commit passed the record before its COMMIT", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"before:COMMIT#1"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  b.brokerStep("c1", "kafka", "FETCH", e);
  const int64_t commit = b.brokerStep("c1", "kafka", "COMMIT_OFFSET", {}, {e[0]});
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
  b.step("c1", "pg", "COMMIT", "COMMIT", "killed-before");
  const int64_t kill = b.kill("c1", "before:COMMIT#1");
  b.spawn("c2");
  b.brokerStep("c2", "kafka", "FETCH", {e[1]});
  credit(b, "c2", e[1], false);
  b.brokerStep("c2", "kafka", "COMMIT_OFFSET", {}, {e[0], e[1]});
  b.finalOp(balances(300));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "ack-before-effect");
  CHECK(v.pattern->explanation == "c1 acknowledged entry 1-0 (COMMIT_OFFSET#1) before committing its effect; the "
                                  "kill at before:COMMIT#1 lost event 1");
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(commit));
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(kill));
  CHECK_THAT(v.pattern->fix, StartsWith("apply the effect and COMMIT first, then commit its offset;"));
  CHECK_THAT(v.pattern->fix, Contains("between COMMIT and the offset commit"));
  CHECK_THAT(v.pattern->fix, !Contains("XACK"));
}

TEST_CASE("effect-without-dedup on Kafka: COMMIT, a kill before COMMIT_OFFSET, applied again", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"after:COMMIT#3"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2, 3, 4, 5});
  const auto [kill, again] = killedBeforeThirdOffset(b, e);
  b.finalOp(balances(12100 + 900));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "effect-without-dedup");
  CHECK(v.pattern->explanation == "c1 committed the effect of event 3 (COMMIT#3) and was killed at after:COMMIT#3 "
                                  "before acknowledging entry 1-2; the redelivery to c2 (FETCH#2) applied it "
                                  "again: nothing recorded that the event was processed");
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(kill));
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(again));
  CHECK_THAT(v.pattern->fix, Contains("COMMIT; then commit its offset"));
  CHECK_THAT(v.pattern->fix, Contains("offset"));
  CHECK_THAT(v.pattern->fix, !Contains("XACK"));
}

TEST_CASE("effect-without-dedup names the entry the kill cut, not a retry later in its batch", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"after:COMMIT#3"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2, 3, 4, 5, 2});
  // Event 3's effect cut; event 2's retry (entry 1-5) waits later in the batch.
  killedBeforeThirdOffset(b, e);
  b.finalOp(balances(12100 + 900 + 300));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "duplicate");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "effect-without-dedup");
  CHECK(v.pattern->explanation == "c1 committed the effect of event 3 (COMMIT#3) and was killed at after:COMMIT#3 "
                                  "before acknowledging entry 1-2; the redelivery to c2 (FETCH#2) applied it "
                                  "again: nothing recorded that the event was processed");
}
