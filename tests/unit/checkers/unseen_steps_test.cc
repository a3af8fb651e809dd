// Steps that may read or settle the broker's entries unseen: a script on Valkey (EVAL, EVALSHA, FCALL), whose
// XAUTOCLAIM or XACK the proxy does not see (ops::Step::unseen). Each may have delivered an entry once more
// (HistoryView::cap), and an entry delivered and no longer pending at the end was acknowledged by one.
#include "patterns_util.h"

#include "checkers/history_view.h"

#include <string>
#include <vector>

using namespace idem;
using namespace idem::testing;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

void creditTx(HistoryBuilder& b, const std::string& proc, const std::string& commitOutcome = "ok") {
  b.step(proc, "pg", "BEGIN");
  b.step(proc, "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
  b.step(proc, "pg", "COMMIT", "COMMIT", commitOutcome);
}

/// Marks the steps at `indexes` as run by a script (what the RESP tracker says of EVAL, EVALSHA, FCALL), and
/// those at `carrying` as scripts whose reply held what looks like an entry id.
std::vector<Op> scripted(std::vector<Op> ops, const std::vector<int64_t>& indexes, const std::vector<int64_t>& carrying = {}) {
  for (int64_t i : indexes) std::get<ops::Step>(ops.at(static_cast<size_t>(i)).record).unseen = true;
  for (int64_t i : carrying) std::get<ops::Step>(ops.at(static_cast<size_t>(i)).record).unseenEntries = true;
  return ops;
}

} // namespace

TEST_CASE("unseen steps: an entry claimed by a script and applied once is no loss", "[checkers]") {
  // c1 is handed event 1 and killed before its COMMIT; c2 claims it in a script (XAUTOCLAIM inside EVAL),
  // credits it, and acknowledges it in another script. Nothing is pending at the end, the balance is right.
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"before:COMMIT#1"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1});
  b.spawn("c1");
  b.brokerStep("c1", "valkey", "XREADGROUP", {e[0]});
  creditTx(b, "c1", "killed-before");
  b.kill("c1", "before:COMMIT#1");
  b.spawn("c2");
  const int64_t claim = b.step("c2", "valkey", "EVAL", "EVAL \"local r = redis.call('XAUTOCLAIM', ...\" 1 wallet");
  creditTx(b, "c2");
  const int64_t ack = b.step("c2", "valkey", "EVALSHA", "EVALSHA 5b1f... 1 wallet 1-0");
  b.finalOp(balances(100));
  const auto rs = checkAll(s, scripted(b.ops(), {claim, ack}, {claim}));
  CHECK(merge(rs) != Verdict::Fail);
  // Unseen, the same history is a loss: the one delivery seen was cut before its COMMIT.
  CHECK(merge(checkAll(s, b.ops())) == Verdict::Fail);
}

TEST_CASE("unseen steps: an entry a script acknowledged before its effect is lost, not stuck", "[checkers]") {
  // c1 marks and acknowledges event 1 in one script (SET NX and XACK inside EVALSHA), then is killed before
  // its credit commits: nothing is pending at the end, and event 1 never took effect.
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"before:COMMIT#1"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  b.brokerStep("c1", "valkey", "XREADGROUP", {e[0], e[1]});
  const int64_t first = b.step("c1", "valkey", "EVALSHA", "EVALSHA 9c2e... 2 seen:1 wallet 1-0");
  creditTx(b, "c1", "killed-before");
  b.kill("c1", "before:COMMIT#1");
  b.spawn("c2");
  b.brokerStep("c2", "valkey", "XAUTOCLAIM", {e[1]});
  const int64_t second = b.step("c2", "valkey", "EVALSHA", "EVALSHA 9c2e... 2 seen:2 wallet 1-1");
  creditTx(b, "c2");
  b.finalOp(balances(300));
  const auto rs = checkAll(s, scripted(b.ops(), {first, second}));
  REQUIRE(merge(rs) == Verdict::Fail);
  const Violation& v = ofKind(result(rs, "invariant:balance").violations, "lost");
  CHECK(v.events == std::vector<int>{1});
  CHECK_THAT(v.message, !Contains("never acknowledged"));
}

TEST_CASE("unseen steps: a script that calls XACK with the entry's id, before the effect, is named", "[checkers]") {
  // The same loss as above, with what the tracker tells of the script: c1's SCRIPT LOAD shows a body that
  // calls XACK, and its EVALSHA of that SHA-1 carries entry 1's id. Named ack-before-effect, citing the
  // EVALSHA; the verdict is the same.
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"before:COMMIT#1"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  b.brokerStep("c1", "valkey", "XREADGROUP", {e[0], e[1]});
  const int64_t load = b.step("c1", "valkey", "SCRIPT", "SCRIPT LOAD local new = redis.call('SET' ...");
  const int64_t first = b.step("c1", "valkey", "EVALSHA", "EVALSHA 9c2e 2 seen:1 wallet g " + e[0]);
  creditTx(b, "c1", "killed-before");
  b.kill("c1", "before:COMMIT#1");
  b.spawn("c2");
  b.brokerStep("c2", "valkey", "XAUTOCLAIM", {e[1]});
  const int64_t second = b.step("c2", "valkey", "EVALSHA", "EVALSHA 9c2e 2 seen:2 wallet g " + e[1]);
  creditTx(b, "c2");
  b.finalOp(balances(300));
  auto ops = scripted(b.ops(), {first, second});
  auto& loaded = std::get<ops::Step>(ops.at(static_cast<size_t>(load)).record);
  loaded.script = "9c2e";
  loaded.scriptCalls = {"XACK"};
  for (auto [i, entry] : {std::pair{first, e[0]}, std::pair{second, e[1]}}) {
    auto& st = std::get<ops::Step>(ops.at(static_cast<size_t>(i)).record);
    st.script = "9c2e";
    st.scriptIds = {entry};
  }
  const auto rs = checkAll(s, ops);
  REQUIRE(merge(rs) == Verdict::Fail);
  const Violation& v = ofKind(result(rs, "invariant:balance").violations, "lost");
  CHECK(v.events == std::vector<int>{1});
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "ack-before-effect");
  CHECK_THAT(v.pattern->explanation, Contains("EVALSHA#1, a Lua script that calls XACK"));
  CHECK(std::find(v.pattern->ops.begin(), v.pattern->ops.end(), first) != v.pattern->ops.end());
  // A script whose body the run never showed, or one that does not call XACK, names nothing.
  for (const auto& calls : {std::vector<std::string>{}, std::vector<std::string>{"XAUTOCLAIM"}}) {
    auto other = ops;
    std::get<ops::Step>(other.at(static_cast<size_t>(load)).record).scriptCalls = calls;
    const Violation& u = ofKind(result(checkAll(s, other), "invariant:balance").violations, "lost");
    CHECK(!u.pattern);
  }
}

TEST_CASE("XGROUP DELCONSUMER of a consumer that held an entry settles it unapplied: lost, named", "[checkers]") {
  // c1 is handed events 1 and 2, credits and acknowledges 1, then deletes its own consumer name (a finally
  // after a failure): Valkey drops entry 2 from the pending list. Nothing is pending at the end, and event 2
  // never took effect: lost (not stuck, which says it is still waiting), named, citing the XGROUP step.
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2});
  b.spawn("c1");
  b.brokerStep("c1", "valkey", "XREADGROUP", {e[0], e[1]});
  creditTx(b, "c1");
  b.brokerStep("c1", "valkey", "XACK", {}, {e[0]});
  const int64_t del = b.step("c1", "valkey", "XGROUP", "XGROUP DELCONSUMER wallet g c1");
  b.finalOp(balances(100));
  auto ops = b.ops();
  auto deleted = [&](const std::string& summary) {
    auto out = ops;
    auto& step = std::get<ops::Step>(out.at(static_cast<size_t>(del)).record);
    step.deletesConsumer = "c1"; // what the tracker reads off XGROUP DELCONSUMER key group c1
    step.summary = summary;
    return out;
  };
  const auto rs = checkAll(s, deleted("(integer) 1"));
  REQUIRE(merge(rs) == Verdict::Fail);
  const Violation& v = ofKind(result(rs, "invariant:balance").violations, "lost");
  CHECK(v.events == std::vector<int>{2});
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "consumer-deleted-with-pending");
  CHECK_THAT(v.pattern->explanation, Contains("c1 deleted consumer c1 (its own name) (XGROUP#1)"));
  // A deletion that dropped nothing (its reply says 0) settles nothing: event 2 is still unacknowledged.
  const auto none = checkAll(s, deleted("(integer) 0"));
  REQUIRE(merge(none) == Verdict::Fail);
  CHECK(!ofKind(result(none, "invariant:balance").violations, "stuck").events.empty());
}

TEST_CASE("a JUSTID claim and the claimant's XRANGE of the entry are its delivery: a duplicate named", "[checkers]") {
  // c1 credits event 1 and is killed after its COMMIT, before XACK. c2 recovers it as some tutorials do:
  // XCLAIM … JUSTID (ids only, no fields), then XRANGE of the id for its fields; it credits it again. The
  // duplicate is told with its event and the XRANGE that handed it over, and named.
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"after:COMMIT#1"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1});
  b.spawn("c1");
  b.brokerStep("c1", "valkey", "XREADGROUP", {e[0]});
  creditTx(b, "c1", "killed-after");
  b.kill("c1", "after:COMMIT#1");
  b.spawn("c2");
  const int64_t peek = b.step("c2", "valkey", "XRANGE", "XRANGE wallet 1-0 1-0"); // before its claim: no delivery
  const int64_t claim = b.step("c2", "valkey", "XCLAIM", "XCLAIM wallet g c2 20 1-0 JUSTID");
  const int64_t range = b.step("c2", "valkey", "XRANGE", "XRANGE wallet 1-0 1-0");
  const int64_t again = b.step("c2", "valkey", "XRANGE", "XRANGE wallet 1-0 1-0"); // once handed, no more
  creditTx(b, "c2");
  b.brokerStep("c2", "valkey", "XACK", {}, {e[0]});
  b.finalOp(balances(200));
  auto ops = b.ops();
  auto stepAt = [&](int64_t i) -> ops::Step& { return std::get<ops::Step>(ops.at(static_cast<size_t>(i)).record); };
  stepAt(claim).claimedIds = {e[0]};
  for (int64_t i : {peek, range, again}) stepAt(i).ranged = {e[0]};
  detail::HistoryView h(s, ops);
  REQUIRE(h.deliveriesOf(1).size() == 2);
  CHECK(h.deliveriesOf(1)[1]->label == "XRANGE#2");
  CHECK(h.deliveriesOf(1)[1]->process == "c2");
  const auto rs = checkAll(s, ops);
  REQUIRE(merge(rs) == Verdict::Fail);
  const Violation& v = ofKind(result(rs, "invariant:balance").violations, "duplicate");
  CHECK(v.events == std::vector<int>{1});
  CHECK_THAT(v.message, Contains("redelivered to c2 (XRANGE#2)"));
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "effect-without-dedup");
}
