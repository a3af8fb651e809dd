// The broker, process, faults and run checkers; merge(); JSON; checkers that throw give Unknown.
#include "check_util.h"
#include "checkers/diagnosis.h"

#include <csignal>

using namespace idem;
using namespace idem::testing;
using nlohmann::json;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

/// Three payments; c1 reads all three, applies and acks the first, and is killed after COMMIT#2.
HistoryBuilder killedRun(const Scenario& s, std::vector<std::string>& entries, std::vector<std::string> kills) {
  HistoryBuilder b(s, std::move(kills));
  b.initial(balances(0));
  entries = sendWallet(b, {100, 300, 900}, {1, 2, 3}); // decodable amounts: sums name their events
  b.spawn("c1");
  b.read("c1", "XREADGROUP", entries);
  applySimply(b, "c1", entries[0], 100);
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "COMMIT", "COMMIT", "killed-after");
  b.kill("c1", "after:COMMIT#2");
  return b;
}

} // namespace

TEST_CASE("broker: pending entries are stuck, naming event, consumer and its kill", "[broker]") {
  Scenario s = builtin("wallet");
  std::vector<std::string> e;
  HistoryBuilder b = killedRun(s, e, {"after:COMMIT#2"});
  b.finalOp(balances(400), json::array({{{"entry", e[1]}, {"consumer", "c1"}, {"deliveries", 1}},
                                        {{"entry", e[2]}, {"consumer", "c1"}, {"deliveries", 1}}}));
  auto rs = checkAll(s, b.ops());
  const auto& r = result(rs, "broker");
  REQUIRE(r.verdict == Verdict::Fail);
  REQUIRE(r.violations.size() == 2);
  const auto& v = r.violations[0];
  CHECK(v.kind == "stuck");
  CHECK(v.invariant == "broker");
  CHECK(v.events == std::vector<int>{2});
  CHECK(v.entries == std::vector<std::string>{"1-1"});
  CHECK(v.kill_point == "after:COMMIT#2");
  CHECK(v.message == "entry 1-1 (event 2) is pending at c1 after 1 delivery, never acknowledged; c1 was killed at "
                     "after:COMMIT#2 and no process claimed it");
  // Event 2 was committed before the kill; event 3 was never started: it is the one missing.
  const auto& bal = result(rs, "invariant:balance");
  REQUIRE(bal.violations.size() == 1);
  CHECK(bal.violations[0].kind == "stuck");
  CHECK(bal.violations[0].events == std::vector<int>{3});
  CHECK(bal.violations[0].message == "event 3 not applied: delivered to c1 (XREADGROUP#1), c1 killed at "
                                     "after:COMMIT#2, never acknowledged; balance of w1 is 400, expected 1300");
  CHECK(result(rs, "faults").verdict == Verdict::Pass);
}

TEST_CASE("broker: never delivered entries are stuck when proven, at a limit, unknown", "[broker]") {
  Scenario s = builtin("wallet");
  std::vector<std::string> e;
  HistoryBuilder b = killedRun(s, e, {});
  SECTION("proven stuck") {
    b.finalOp(balances(400), json::array(), json::array({e[2]}), "stuck");
    const auto r = result(checkAll(s, b.ops()), "broker");
    REQUIRE(r.violations.size() == 1);
    // Read once (XREADGROUP#1) and never acknowledged, and unread for the broker at the end.
    CHECK(r.violations[0].message == "entry 1-2 (event 3) was delivered (XREADGROUP#1 to c1) but is unread for the "
                                     "broker at the end: nothing acknowledged it");
  }
  SECTION("acknowledged, then unread again: the broker's position went back and no one read it again") {
    b.ack("c1", {e[2]});
    b.finalOp(balances(400), json::array(), json::array({e[2]}), "stuck");
    const auto r = result(checkAll(s, b.ops()), "broker");
    REQUIRE(r.violations.size() == 1);
    CHECK(r.violations[0].message == "entry 1-2 (event 3) was delivered (XREADGROUP#1 to c1) and acknowledged (XACK#2 "
                                     "by c1), yet is unread for the broker at the end: its position went back (a "
                                     "forget, a rebalance) and no consumer read and acknowledged it again");
  }
  SECTION("the run ended at the deadline: the consumer may still have been busy") {
    b.finalOp(balances(400), json::array(), json::array({e[2]}), "limit");
    auto rs = checkAll(s, b.ops());
    const auto r = result(rs, "broker");
    CHECK(r.verdict == Verdict::Unknown);
    CHECK(r.violations.empty());
    CHECK(r.error == "1 entry left pending or undelivered, but the run did not finish (deadline of 60 s reached with "
                     "c1 silent for 58 s holding 1 entry; raise --deadline)");
    // What is missing may still have come: the invariant can't call it lost or stuck either.
    CHECK(result(rs, "invariant:balance").verdict == Verdict::Unknown);
    CHECK(merge(rs) == Verdict::Unknown);
  }
}

TEST_CASE("process: exiting non-zero by itself is a crash naming status and log", "[process]") {
  Scenario s = builtin("wallet");
  std::vector<std::string> e;
  HistoryBuilder b = killedRun(s, e, {"after:COMMIT#2"});
  b.spawn("c2");
  b.exit("c2", 3, std::nullopt, "self");
  b.spawn("c3");
  b.exit("c3", std::nullopt, 11, "self");
  b.spawn("c4");
  b.exit("c4", 0, std::nullopt, "self"); // done by itself: fine
  b.spawn("c5");
  b.exit("c5", std::nullopt, 15, "harness"); // stopped by the harness: fine
  b.spawn("c6");
  b.exit("c6", std::nullopt, 6, "harness"); // a signal the harness never sends
  b.spawn("c7");
  // An HTTP server whose PORT another process held, aborted on its uncaught bind error: replaced, no crash.
  b.exit("c7", std::nullopt, 6, "port-taken");
  b.finalOp(balances(400));
  const auto r = result(checkAll(s, b.ops()), "process");
  REQUIRE(r.verdict == Verdict::Fail);
  REQUIRE(r.violations.size() == 3);
  CHECK(r.violations[0].kind == "crash");
  CHECK(r.violations[0].key == "c2");
  CHECK(r.violations[0].message == "c2 crashed: exit 3 (log /tmp/run/c2.log)");
  CHECK(r.violations[1].message == "c3 crashed: signal 11 (SIGSEGV) (log /tmp/run/c3.log)");
  CHECK(r.violations[2].message == "c6 crashed: signal 6 (SIGABRT) (log /tmp/run/c6.log)");
}

TEST_CASE("process: an exit on an error the broker answered after a forget or a rebalance is no crash", "[process]") {
  // NATS answers a pull on the durable a forget made anew 409; Kafka a commit of a member a rebalance took
  // out UNKNOWN_MEMBER_ID. A consumer that exits on it is restarted, as on any fault it lived through.
  Scenario s = builtin("wallet");
  for (const std::string fault : {"forget:after:FETCH#1", "rebalance:after:BEGIN#2"}) {
    HistoryBuilder b(s);
    b.initial(balances(0));
    b.spawn("c1");
    b.fault("c1", fault);
    b.sql("c1", "COMMIT", "COMMIT", {}, "COMMIT");
    b.exit("c1", 1, std::nullopt, "self");
    b.finalOp(balances(0));
    auto ops = b.ops();
    // c1's broker error after the fault, before its exit.
    ops::Step refused;
    refused.server = "nats";
    refused.conn = 1;
    refused.verb = "FETCH";
    refused.k = 2;
    refused.error = true;
    refused.summary = "409 Consumer Deleted";
    Op o;
    o.process = "c1";
    o.record = refused;
    ops.insert(ops.end() - 2, o);
    for (size_t i = 0; i < ops.size(); ++i) ops[i].index = static_cast<int64_t>(i);
    INFO(fault);
    CHECK(result(checkAll(s, ops), "process").verdict == Verdict::Pass);
    // Without that error it was told nothing: its exit 1 is a crash.
    ops.erase(ops.end() - 3);
    for (size_t i = 0; i < ops.size(); ++i) ops[i].index = static_cast<int64_t>(i);
    CHECK(result(checkAll(s, ops), "process").verdict == Verdict::Fail);
  }
}

TEST_CASE("process: an exit on a group error the broker answered while members joined is no crash", "[process]") {
  // Two Kafka consumers: c2 joins, the coordinator refuses c1's offset commit (REBALANCE_IN_PROGRESS) until
  // the group is stable again, and c1 gives up and exits 1: no fault, yet an error it may exit on. The same
  // exit after an error that says nothing of the group (a topic it may not read) is a crash.
  Scenario s = builtin("wallet");
  for (const bool transient : {true, false}) {
    HistoryBuilder b(s);
    b.initial(balances(0));
    b.spawn("c1");
    b.spawn("c2");
    ops::Step refused;
    refused.server = "kafka";
    refused.conn = 1;
    refused.verb = "COMMIT_OFFSET";
    refused.k = 1;
    refused.error = true;
    refused.transient = transient;
    refused.summary = transient ? "events.1-0: REBALANCE_IN_PROGRESS" : "events.1-0: TOPIC_AUTHORIZATION_FAILED";
    b.h.append("c1", refused);
    b.exit("c1", 1, std::nullopt, "self");
    b.finalOp(balances(0));
    INFO(refused.summary);
    CHECK(result(checkAll(s, b.ops()), "process").verdict == (transient ? Verdict::Pass : Verdict::Fail));
  }
}

TEST_CASE("faults: a kill point that never fired makes the run unknown", "[faults]") {
  Scenario s = builtin("wallet");
  std::vector<std::string> e;
  HistoryBuilder b = killedRun(s, e, {"after:COMMIT#2", "after:COMMIT#3", "before:xack#9"});
  b.finalOp(balances(400));
  auto rs = checkAll(s, b.ops());
  const auto& r = result(rs, "faults");
  CHECK(r.verdict == Verdict::Unknown);
  CHECK(r.violations.empty());
  CHECK(r.error == "kill point after:COMMIT#3 never fired: the target made 2 COMMIT requests; "
                   "kill point before:XACK#9 never fired: the target made 1 XACK request");
}

TEST_CASE("faults: a fault at a shutdown step never fires, and its note says why", "[faults]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"forget:after:CANCEL#1"});
  b.initial(balances(0));
  b.spawn("c1");
  const int64_t cancel = b.step("c1", "rabbitmq", "CANCEL");
  b.exit("c1", std::nullopt, SIGTERM, "harness");
  b.finalOp(balances(0));
  auto ops = b.ops();
  std::get<ops::Step>(ops[static_cast<size_t>(cancel)].record).stopping = true;
  const auto& r = result(checkAll(s, ops), "faults");
  CHECK(r.verdict == Verdict::Unknown);
  CHECK(r.error == "fault forget:after:CANCEL#1 never fired: the target made 1 CANCEL request, sent while idemproof "
                   "stopped its process (a shutdown step is no fault point)");
}

TEST_CASE("faults: a fault reached but not applied at its step says why, not that it never fired", "[faults]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"error:before:XACK#1:40001"});
  b.initial(balances(0));
  b.spawn("c1");
  b.h.append("c1", ops::Note{"fault error:before:XACK#1:40001 not applied: 40001 is a PostgreSQL error and XACK is a "
                             "Valkey step"});
  b.step("c1", "valkey", "XACK");
  b.finalOp(balances(0));
  const auto& r = result(checkAll(s, b.ops()), "faults");
  CHECK(r.verdict == Verdict::Unknown);
  CHECK(r.error == "fault error:before:XACK#1:40001 was not applied at its step: 40001 is a PostgreSQL error and XACK "
                   "is a Valkey step");
}

TEST_CASE("run: an error op makes the run unknown", "[run]") {
  Scenario s = builtin("wallet");
  auto ops = simpleWalletRun();
  finalOf(ops).observed = observedOf(balances(25000));
  History h = History::fromJson(json(ops));
  h.append("harness", ops::Error{"consumer c1 exited before any request"});
  auto rs = checkAll(s, h.ops());
  CHECK(result(rs, "run").verdict == Verdict::Unknown);
  CHECK(result(rs, "run").error == "the run could not be judged: consumer c1 exited before any request");
  CHECK(merge(rs) == Verdict::Unknown);
}

TEST_CASE("missing final or initial op: unknown, never valid", "[unknown]") {
  Scenario s = builtin("wallet");
  auto ops = simpleWalletRun();
  ops.pop_back(); // no final op
  auto rs = checkAll(s, ops);
  CHECK(result(rs, "invariant:balance").verdict == Verdict::Unknown);
  CHECK_THAT(result(rs, "invariant:balance").error, Contains("no final op"));
  CHECK(result(rs, "broker").verdict == Verdict::Unknown);
  CHECK(merge(rs) == Verdict::Unknown);

  ops = simpleWalletRun();
  ops.erase(ops.begin() + 1); // no initial op
  rs = checkAll(s, ops);
  CHECK(result(rs, "invariant:balance").verdict == Verdict::Unknown);
  CHECK_THAT(result(rs, "invariant:balance").error, Contains("no initial op"));
}

TEST_CASE("a checker that throws gives unknown, never valid", "[unknown]") {
  Scenario s = builtin("wallet");
  auto ops = simpleWalletRun();
  SECTION("final op without rows for the invariant") {
    finalOf(ops).observed.clear();
    auto rs = checkAll(s, ops);
    CHECK(result(rs, "invariant:balance").verdict == Verdict::Unknown);
    CHECK_THAT(result(rs, "invariant:balance").error, StartsWith("checker failed: the final op has no rows for invariant"));
    CHECK(result(rs, "process").verdict == Verdict::Pass);
  }
  SECTION("a row with a non-integer balance") {
    finalOf(ops).observed["balance"][0][1] = "lots";
    CHECK(result(checkAll(s, ops), "invariant:balance").verdict == Verdict::Unknown);
  }
  SECTION("a row with too many columns") {
    finalOf(ops).observed["balance"][0].push_back("extra");
    CHECK(result(checkAll(s, ops), "invariant:balance").verdict == Verdict::Unknown);
  }
}

TEST_CASE("merge: invalid beats unknown beats valid", "[merge]") {
  auto r = [](Verdict v) {
    CheckResult c;
    c.verdict = v;
    return c;
  };
  CHECK(merge({}) == Verdict::Pass);
  CHECK(merge({r(Verdict::Pass), r(Verdict::Pass)}) == Verdict::Pass);
  CHECK(merge({r(Verdict::Pass), r(Verdict::Unknown)}) == Verdict::Unknown);
  CHECK(merge({r(Verdict::Unknown), r(Verdict::Fail), r(Verdict::Pass)}) == Verdict::Fail);
  CHECK(merge({r(Verdict::Fail), r(Verdict::Unknown)}) == Verdict::Fail);
}

TEST_CASE("results serialise with stable keys", "[json]") {
  Scenario s = builtin("wallet");
  auto rs = checkAll(s, simpleWalletRun());
  json j = rs;
  REQUIRE(j.size() == 6);
  CHECK(j[0]["checker"] == "invariant:balance");
  CHECK(j[0]["verdict"] == "fail");
  CHECK(j[1]["checker"] == "broker");
  CHECK(j[1]["verdict"] == "pass");
  CHECK(j[2]["checker"] == "process");
  CHECK(j[3]["checker"] == "faults");
  CHECK(j[4]["checker"] == "run");
  json v = j[0]["violations"][0];
  for (const char* key : {"kind", "invariant", "key", "expected", "observed", "events", "candidates", "entries",
                          "kill_point", "message", "ops"})
    CHECK(v.contains(key));
  CHECK(v["events"] == json::array({2}));
  CHECK(std::string(toString(Verdict::Unknown)) == "unknown");
}

TEST_CASE("run: a producer that did not send the whole schedule makes the run unknown", "[run]") {
  Scenario s = builtin("wallet");
  auto ops = simpleWalletRun();
  finalOf(ops).observed = observedOf(balances(25000));
  auto& plan = std::get<ops::Plan>(ops[0].record);
  plan.schedule.stream.assign(7, StreamEntry{1, 1});
  const auto r = result(checkAll(s, ops), "run");
  CHECK(r.verdict == Verdict::Unknown);
  CHECK(r.error == "the producer sent 6 of the 7 stream entries the schedule holds");
}
