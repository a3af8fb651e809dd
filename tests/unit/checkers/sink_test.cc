// The sink's checkers (sink:exactly-once, sink:agreement, sink:key-stable), their diagnoses and the anti-pattern
// of a call and a commit in the wrong order, on written histories of scenarios/payments.json: event 1 (w1,
// 5000) and event 2 (w1, 2500), read together by c1; the sink's call records as the sink writes them, before
// the CALL step that carried each.
#include "check_util.h"

#include <catch2/catch.hpp>

using namespace idem;
using namespace idem::testing;
using nlohmann::json;

namespace sink_checks {

const Scenario& scenario() {
  static const Scenario s = builtin("payments");
  return s;
}

/// Writes a payments history: sends, the consumer's steps, the sink's calls.
class Payments {
public:
  Payments() : b(scenario()) {
    b.initial({{"balance", balancesOf(0)}, {"booked", json::array()}, {"sink:booked", json::array()}});
    e1 = b.send(1, {{"wallet", "w1"}, {"amount", "5000"}});
    e2 = b.send(2, {{"wallet", "w1"}, {"amount", "2500"}});
    b.spawn("c1");
    b.read("c1", "XREADGROUP", {e1, e2});
  }

  /// A call of event n by `proc`: the sink's record (unless the step never reached it), then the CALL step.
  /// `outcome`: executed | replayed | mismatch | rejected, or "" when the sink never saw it.
  void call(const std::string& proc, int n, const std::string& outcome, const std::string& key = "",
            const std::string& step = "ok") {
    const std::string ref = b.eventId(n);
    if (!outcome.empty()) record(ref, outcome, key);
    b.step(proc, "sink", "CALL", fmt::format("POST /charges key={} ref={}", key, ref), step);
  }
  /// The sink's record of a call with `ref`, as the sink numbers calls and executions.
  void record(const std::string& ref, const std::string& outcome, const std::string& key = "") {
    ops::Call c;
    c.id = ++calls_;
    c.method = "POST";
    c.path = "/charges";
    c.keyHeader = !key.empty();
    c.key = key;
    c.ref = ref;
    c.digest = "00000000000000ab";
    c.outcome = outcome;
    c.status = outcome == "executed" || outcome == "replayed" ? 200 : outcome == "mismatch" ? 422 : 404;
    if (outcome == "executed") c.execution = ++executions_;
    if (outcome == "replayed") c.execution = executionOf_[key];
    if (outcome == "executed" && !key.empty()) executionOf_[key] = c.execution;
    b.h.append("sink", c);
  }
  /// BEGIN, the debit, the payment's row, (the call), COMMIT.
  void effect(const std::string& proc) {
    b.step(proc, "pg", "BEGIN");
    b.sql(proc, "UPDATE", "UPDATE wallets SET balance_halala = balance_halala - $1 WHERE id = $2", {"wallets"}, "UPDATE 1");
    b.sql(proc, "INSERT", "INSERT INTO payments VALUES ($1, $2, $3)", {"payments"}, "INSERT 0 1");
  }
  void commit(const std::string& proc) { b.step(proc, "pg", "COMMIT"); }
  std::string e1Ref() { return b.eventId(1); }

  /// The final op: `booked` the events with a payment row (both in booked and sink:booked).
  std::vector<Op> finish(const std::vector<int>& booked, const std::string& end = "", const std::string& policy = "") {
    json rowsJson = json::array();
    for (int n : booked) rowsJson.push_back(json::array({b.eventId(n)}));
    b.finalOp({{"balance", balancesOf(7500)}, {"booked", rowsJson}, {"sink:booked", rowsJson}}, json::array(),
              json::array(), end);
    auto ops = b.ops();
    std::get<ops::Plan>(ops.front().record).sinkPolicy = policy.empty() ? "honour" : policy;
    return ops;
  }

  static json balancesOf(int64_t spent) {
    return json::array({json::array({"w1", std::to_string(1000000 - spent)}), json::array({"w2", "1000000"}),
                        json::array({"w3", "1000000"})});
  }

  HistoryBuilder b;
  std::string e1, e2;

private:
  int calls_ = 0, executions_ = 0;
  std::map<std::string, int> executionOf_;
};

/// Event 1 charged and committed, then acknowledged by c1.
void first(Payments& p, const std::string& key = "") {
  p.effect("c1");
  p.call("c1", 1, "executed", key);
  p.commit("c1");
  p.b.ack("c1", {p.e1});
}

/// Call, then commit: c1 killed after event 2's call, before its COMMIT; c2 gets it again and calls again with
/// `key2` (the sink replays when it is event 2's first key and keys are honoured).
std::vector<Op> callThenCommit(const std::string& key1, const std::string& key2, const std::string& again,
                               const std::string& policy = "") {
  Payments p;
  first(p, key1.empty() ? "" : "k-1");
  p.effect("c1");
  p.call("c1", 2, "executed", key1);
  p.b.kill("c1", "after:CALL#2");
  p.b.spawn("c2");
  p.b.read("c2", "XAUTOCLAIM", {p.e2});
  p.effect("c2");
  p.call("c2", 2, again, key2);
  p.commit("c2");
  p.b.ack("c2", {p.e2});
  return p.finish({1, 2}, "", policy);
}

/// Commit, then call: c1 killed after event 2's COMMIT, before its call; c2 finds the payment booked and
/// acknowledges it without a call.
std::vector<Op> commitThenCall(const std::string& end = "") {
  Payments p;
  first(p);
  p.effect("c1");
  p.commit("c1");
  p.b.kill("c1", "after:COMMIT#2");
  p.b.spawn("c2");
  p.b.read("c2", "XAUTOCLAIM", {p.e2});
  p.b.sql("c2", "SELECT", "SELECT 1 FROM payments WHERE event_id = $1", {"payments"}, "SELECT 1");
  p.b.ack("c2", {p.e2});
  return p.finish({1, 2}, end);
}

CheckResult check(const std::vector<Op>& ops, const std::string& checker) { return result(checkAll(scenario(), ops), checker); }

const std::string kId2 = "00000000-0000-4000-8000-000000000002";

} // namespace sink_checks

using namespace sink_checks;

TEST_CASE("sink: a keyed call before the commit passes all three checks", "[checkers][sink]") {
  // The call made again after the kill carries event 2's key: the sink replays execution 2.
  auto rs = checkAll(scenario(), callThenCommit("k-2", "k-2", "replayed"));
  for (const char* c : {"sink:exactly-once", "sink:agreement", "sink:key-stable", "invariant:booked", "broker"}) {
    INFO(c << ": " << result(rs, c).error);
    CHECK(result(rs, c).verdict == Verdict::Pass);
  }
}

TEST_CASE("sink:exactly-once: charged twice after a kill between call and commit", "[checkers][sink]") {
  auto r = check(callThenCommit("", "", "executed"), "sink:exactly-once");
  REQUIRE(r.verdict == Verdict::Fail);
  REQUIRE(r.violations.size() == 1);
  const auto& v = r.violations[0];
  CHECK(v.kind == "charged-twice");
  CHECK(v.events == std::vector<int>{2});
  CHECK(v.kill_point == "after:CALL#2");
  CHECK(v.expected == 1);
  CHECK(v.observed == 2);
  CHECK(v.message == "event 2 (event_id '" + kId2 + "') charged twice (executions 2 and 3, calls 2 and 3): delivered to "
                     "c1 (XREADGROUP#1), c1 called at CALL#2 (call 2: executed, execution 2), c1 killed at "
                     "after:CALL#2, redelivered to c2 (XAUTOCLAIM#1), c2 called again at CALL#3 (call 3: executed, "
                     "execution 3), acknowledged by c2 (XACK#2)");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "sink-call-commit-order");
  CHECK(v.pattern->explanation ==
        "c1 called the sink for event 2 at CALL#2 (execution 2, call 2) before committing its effect; the kill at "
        "after:CALL#2 came before the COMMIT; after the redelivery c2 called again at CALL#3 and the provider "
        "executed it again (execution 3, call 3), no key telling it a repeat");
  CHECK(v.pattern->fix.find("derive an idempotency key from the event") != std::string::npos);
  CHECK(v.pattern->fix.find("outbox") != std::string::npos);
  // Booked once and charged: the two sides agree, however often.
  CHECK(check(callThenCommit("", "", "executed"), "sink:agreement").verdict == Verdict::Pass);
}

TEST_CASE("sink:exactly-once: never charged after a kill between commit and call", "[checkers][sink]") {
  auto r = check(commitThenCall(), "sink:exactly-once");
  REQUIRE(r.verdict == Verdict::Fail);
  const auto& v = r.violations.at(0);
  CHECK(v.kind == "never-charged");
  CHECK(v.events == std::vector<int>{2});
  CHECK(v.kill_point == "after:COMMIT#2");
  CHECK(v.message == "event 2 (event_id '" + kId2 + "') never charged: delivered to c1 (XREADGROUP#1), c1 killed at "
                     "after:COMMIT#2, redelivered to c2 (XAUTOCLAIM#1), acknowledged by c2 (XACK#2); the sink "
                     "executed no call for it");
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "sink-call-commit-order");
  CHECK(v.pattern->explanation == "c1 committed at COMMIT#2 before calling the sink for event 2; the kill at "
                                  "after:COMMIT#2 came before the call, and no later delivery called it: booked, "
                                  "never charged");
  // At a limit the call may still come: unknown, never a pass.
  CHECK(check(commitThenCall("limit"), "sink:exactly-once").verdict == Verdict::Unknown);
}

TEST_CASE("sink:agreement: booked but not charged, charged but not booked", "[checkers][sink]") {
  auto booked = check(commitThenCall(), "sink:agreement");
  REQUIRE(booked.verdict == Verdict::Fail);
  const auto& b = booked.violations.at(0);
  CHECK(b.kind == "booked-not-charged");
  CHECK(b.events == std::vector<int>{2});
  CHECK(b.message == "event 2 (event_id '" + kId2 + "') booked but not charged: delivered to c1 (XREADGROUP#1), c1 "
                     "killed at after:COMMIT#2, redelivered to c2 (XAUTOCLAIM#1), acknowledged by c2 (XACK#2); "
                     "sink:booked has its row, the sink executed no call for it");
  REQUIRE(b.pattern);
  CHECK(b.pattern->id == "sink-call-commit-order");

  // c1 charges event 2, its INSERT fails, and it acknowledges the event anyway.
  Payments p;
  first(p);
  p.b.step("c1", "pg", "BEGIN");
  p.call("c1", 2, "executed");
  p.b.sql("c1", "INSERT", "INSERT INTO payments VALUES ($1, $2, $3)", {"payments"}, "deadlock detected", true);
  p.b.step("c1", "pg", "ROLLBACK");
  p.b.ack("c1", {p.e2});
  auto charged = check(p.finish({1}), "sink:agreement");
  REQUIRE(charged.verdict == Verdict::Fail);
  const auto& c = charged.violations.at(0);
  CHECK(c.kind == "charged-not-booked");
  CHECK(c.message == "event 2 (event_id '" + kId2 + "') charged but not booked (execution 2, call 2): delivered to c1 "
                     "(XREADGROUP#1), c1 called at CALL#2 (call 2: executed, execution 2), acknowledged by c1 (XACK#2); "
                     "sink:booked has no row for it");
  CHECK_FALSE(c.pattern); // no kill: not the call-and-commit gap

  // At a limit neither side is final.
  CHECK(check(commitThenCall("limit"), "sink:agreement").verdict == Verdict::Unknown);
}

TEST_CASE("sink:key-stable: another key, or none, for the same event", "[checkers][sink]") {
  auto changed = check(callThenCommit("k-2", "k-2b", "executed"), "sink:key-stable");
  REQUIRE(changed.verdict == Verdict::Fail);
  const auto& v = changed.violations.at(0);
  CHECK(v.kind == "key-changed");
  CHECK(v.events == std::vector<int>{2});
  CHECK(v.message.rfind("event 2 (event_id '" + kId2 + "') called with 2 different Idempotency-Key keys, 'k-2' "
                        "(call 2) and 'k-2b' (call 3): delivered to c1 (XREADGROUP#1)", 0) == 0);
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "sink-key-per-attempt");
  CHECK(v.pattern->explanation.rfind("c1 at CALL#2 called the sink for event 2 with key 'k-2', and c2 at CALL#3 with "
                                     "key 'k-2b':", 0) == 0);
  auto none = check(callThenCommit("k-2", "", "executed"), "sink:key-stable");
  REQUIRE(none.verdict == Verdict::Fail);
  CHECK(none.violations.at(0).message.find("'k-2' (call 2) and none (call 3)") != std::string::npos);
  // A new key is a new charge for the provider: charged twice too, and not the missing-key mistake.
  auto twice = check(callThenCommit("k-2", "k-2b", "executed"), "sink:exactly-once");
  REQUIRE(twice.verdict == Verdict::Fail);
  REQUIRE(twice.violations.at(0).pattern);
  CHECK(twice.violations.at(0).pattern->explanation.find("under another key") != std::string::npos);
}

TEST_CASE("sink: keys are not judged when the provider ignores them", "[checkers][sink]") {
  // The same key on both calls, executed twice by a provider that ignores keys (--sink-policy ignore).
  auto rs = checkAll(scenario(), callThenCommit("k-2", "k-2", "executed", "ignore"));
  for (const auto& r : rs) CHECK(r.checker != "sink:key-stable");
  const auto& once = result(rs, "sink:exactly-once");
  REQUIRE(once.verdict == Verdict::Fail);
  const auto& v = once.violations.at(0);
  CHECK(v.kind == "charged-twice");
  // The consumer derived its key (not the missing-key mistake) and left the rest to the provider.
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "sink-key-only");
  CHECK(v.pattern->explanation ==
        "c1 at CALL#2 called the sink for event 2 with Idempotency-Key 'k-2' (execution 2, call 2), and c2 at CALL#3 "
        "called again with the same key (execution 3, call 3), after the kill at after:CALL#2 cut the first call "
        "from its COMMIT; the provider ignores keys (sink policy ignore), so the key stopped nothing");
  CHECK(v.pattern->fix.find("ask the provider what became of the key") != std::string::npos);
}

TEST_CASE("sink: the producer's copy called again under the same key, the provider ignoring keys, names the key "
          "as the only dedup", "[checkers][sink]") {
  // No fault: event 2 sent twice; c1 books the first copy, then calls again for the second before it looks.
  for (const std::string policy : {"ignore", "honour"}) {
    Payments p;
    first(p, "k-1");
    p.effect("c1");
    p.call("c1", 2, "executed", "k-2");
    p.commit("c1");
    p.b.ack("c1", {p.e2});
    const std::string copy = p.b.send(2, {{"wallet", "w1"}, {"amount", "2500"}});
    p.b.read("c1", "XREADGROUP", {copy});
    p.call("c1", 2, policy == "ignore" ? "executed" : "replayed", "k-2");
    p.b.sql("c1", "INSERT", "INSERT INTO payments VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", {"payments"}, "INSERT 0 0");
    p.b.ack("c1", {copy});
    const auto once = check(p.finish({1, 2}, "", policy), "sink:exactly-once");
    INFO(policy << ": " << once.error);
    if (policy == "honour") {
      CHECK(once.verdict == Verdict::Pass); // the provider replayed the second call
      continue;
    }
    REQUIRE(once.verdict == Verdict::Fail);
    const auto& v = once.violations.at(0);
    REQUIRE(v.pattern);
    CHECK(v.pattern->id == "sink-key-only");
    CHECK(v.pattern->explanation.find("c1 at CALL#3 called again with the same key (execution 3, call 3), for a copy "
                                      "of the event the producer sent again;") != std::string::npos);
    CHECK(v.pattern->ops.size() == 4); // both CALL steps and both executions
  }
}

TEST_CASE("sink:exactly-once: a charge that names no event sent", "[checkers][sink]") {
  Payments p;
  first(p);
  p.record("not-an-event", "executed");
  p.effect("c1");
  p.call("c1", 2, "executed");
  p.commit("c1");
  p.b.ack("c1", {p.e2});
  auto r = check(p.finish({1, 2}), "sink:exactly-once");
  REQUIRE(r.verdict == Verdict::Fail);
  CHECK(r.violations.at(0).kind == "phantom");
  CHECK(r.violations.at(0).message == "ref 'not-an-event', which no event sent carries, charged (execution 2, call 2): "
                                      "the sink received call 2: executed, execution 2");
  CHECK(check(p.finish({1, 2}), "sink:agreement").verdict == Verdict::Fail);
}

TEST_CASE("sink: without the booked rows agreement is unknown, and calls link to their steps",
          "[checkers][sink]") {
  auto ops = callThenCommit("k-2", "k-2", "replayed");
  finalOf(ops).observed.erase("sink:booked");
  auto r = check(ops, "sink:agreement");
  CHECK(r.verdict == Verdict::Unknown);
  CHECK(r.error == "the final op has no rows of the sink's booked query (sink:booked)");
  // A call killed before it reached the sink has no record: the next call's record is not its.
  Payments p;
  first(p, "k-1");
  p.effect("c1");
  p.call("c1", 2, "", "k-2", "killed-before");
  p.b.kill("c1", "before:CALL#2");
  p.b.spawn("c2");
  p.b.read("c2", "XAUTOCLAIM", {p.e2});
  p.effect("c2");
  p.call("c2", 2, "executed", "k-2");
  p.commit("c2");
  p.b.ack("c2", {p.e2});
  auto rs = checkAll(scenario(), p.finish({1, 2}));
  CHECK(result(rs, "sink:exactly-once").verdict == Verdict::Pass);
  CHECK(result(rs, "sink:agreement").verdict == Verdict::Pass);
}

TEST_CASE("sink:exactly-once: an ambiguous call retried without a key names its drop", "[checkers][sink]") {
  // c1's connection to the sink is reset after the sink executed event 2's call; c1 calls again at once.
  Payments p;
  first(p);
  p.effect("c1");
  // The sink records the call, the fault fires at its answer, then the step ends (as the proxy records them).
  p.record(kId2, "executed");
  p.b.fault("c1", "drop:after:CALL#2");
  p.b.step("c1", "sink", "CALL", "POST /charges key= ref=" + kId2, "dropped-after");
  p.call("c1", 2, "executed");
  p.commit("c1");
  p.b.ack("c1", {p.e2});
  auto r = check(p.finish({1, 2}), "sink:exactly-once");
  REQUIRE(r.verdict == Verdict::Fail);
  const auto& v = r.violations.at(0);
  CHECK(v.kind == "charged-twice");
  CHECK(v.kill_point == "drop:after:CALL#2");
  CHECK(v.message == "event 2 (event_id '" + kId2 + "') charged twice (executions 2 and 3, calls 2 and 3): delivered to "
                     "c1 (XREADGROUP#1), c1 called at CALL#2 (call 2: executed, execution 2), c1's connection dropped "
                     "at drop:after:CALL#2, c1 called again at CALL#3 (call 3: executed, execution 3), acknowledged by "
                     "c1 (XACK#2)");
  // No kill between the call and the commit: not the order of the two, but the missing key.
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "sink-call-without-key");
  CHECK(v.pattern->explanation ==
        "c1 at CALL#2 called the sink for event 2 without a key (execution 2, call 2), and c1 at CALL#3 called again "
        "without one (execution 3, call 3): with no key the provider cannot tell a repeat, and it executed both");
}

TEST_CASE("sink: a retry after a drop under a fresh key names a key per attempt, on both violations",
          "[checkers][sink]") {
  // c1's connection to the sink is reset after the sink executed event 2's call under 'k-2a'; c1 retries at
  // once under 'k-2b' (a key made per request), and the provider executes that as a new charge.
  auto retried = [](const std::string& policy) {
    Payments p;
    first(p, "k-1");
    p.effect("c1");
    p.record(kId2, "executed", "k-2a");
    p.b.fault("c1", "drop:after:CALL#2");
    p.b.step("c1", "sink", "CALL", "POST /charges key=k-2a ref=" + kId2, "dropped-after");
    p.call("c1", 2, "executed", "k-2b");
    p.commit("c1");
    p.b.ack("c1", {p.e2});
    return p.finish({1, 2}, "", policy);
  };
  const auto rs = checkAll(scenario(), retried("honour"));
  const auto& twice = result(rs, "sink:exactly-once");
  REQUIRE(twice.verdict == Verdict::Fail);
  REQUIRE(twice.violations.at(0).pattern);
  CHECK(twice.violations.at(0).pattern->id == "sink-key-per-attempt");
  CHECK(twice.violations.at(0).pattern->explanation ==
        "c1 at CALL#2 called the sink for event 2 with key 'k-2a', and c1 at CALL#3 with key 'k-2b', and both "
        "executed: the key changes with the call, so a provider that honours keys takes the second for a new charge");
  CHECK(twice.violations.at(0).pattern->fix.find("derive the Idempotency-Key from the event") != std::string::npos);
  const auto& changed = result(rs, "sink:key-stable");
  REQUIRE(changed.verdict == Verdict::Fail);
  REQUIRE(changed.violations.at(0).pattern);
  CHECK(changed.violations.at(0).pattern->id == "sink-key-per-attempt");
  // A provider that ignores keys: no key is judged, and one made per attempt is not the mistake named.
  const auto ignored = check(retried("ignore"), "sink:exactly-once");
  REQUIRE(ignored.verdict == Verdict::Fail);
  CHECK_FALSE(ignored.violations.at(0).pattern);
}

TEST_CASE("sink: a fault at another event's call is not told in this event's story, nor its kill point",
          "[checkers][sink]") {
  // c1 holds events 1 and 2 (one read). Event 1's keyed call is dropped after the sink executed it and
  // replayed when called again; event 2 is called twice without a key, no fault at all.
  Payments p;
  p.effect("c1");
  p.record(p.e1Ref(), "executed", "k-1");
  p.b.fault("c1", "drop:after:CALL#1");
  p.b.step("c1", "sink", "CALL", "POST /charges ref=" + p.e1Ref() + " key=k-1", "dropped-after");
  p.call("c1", 1, "replayed", "k-1");
  p.commit("c1");
  p.b.ack("c1", {p.e1});
  p.effect("c1");
  p.call("c1", 2, "executed");
  p.call("c1", 2, "executed");
  p.commit("c1");
  p.b.ack("c1", {p.e2});
  auto r = check(p.finish({1, 2}), "sink:exactly-once");
  REQUIRE(r.verdict == Verdict::Fail);
  REQUIRE(r.violations.size() == 1);
  const auto& v = r.violations.at(0);
  CHECK(v.kind == "charged-twice");
  CHECK(v.events == std::vector<int>{2});
  CHECK(v.kill_point.empty());
  CHECK(v.message.find("dropped") == std::string::npos);
  CHECK(v.message.find("c1 called at CALL#3") != std::string::npos);
}

TEST_CASE("sink:key-stable: a key changed after a call the sink never received is changed all the same",
          "[checkers][sink]") {
  // c1's first call of event 2 is answered 503 in the sink's place (error:before:CALL#2); it calls again
  // under a fresh key, executed once: charged once, yet its key is not stable.
  Payments p;
  first(p, "k-1");
  p.effect("c1");
  p.b.fault("c1", "error:before:CALL#2:503");
  p.b.step("c1", "sink", "CALL", "POST /charges ref=" + kId2 + " key=k-2a", "answered");
  p.call("c1", 2, "executed", "k-2b");
  p.commit("c1");
  p.b.ack("c1", {p.e2});
  auto rs = checkAll(scenario(), p.finish({1, 2}));
  CHECK(result(rs, "sink:exactly-once").verdict == Verdict::Pass);
  const auto& r = result(rs, "sink:key-stable");
  REQUIRE(r.verdict == Verdict::Fail);
  CHECK(r.violations.at(0).message.find("called with 2 different Idempotency-Key keys, 'k-2b' (call 2) and 'k-2a' "
                                        "(c1 at CALL#2, which the sink never received)") != std::string::npos);
}
