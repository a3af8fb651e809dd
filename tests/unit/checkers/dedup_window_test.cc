// The dedup window: a producer retry after an `age` fault is judged by its simulated age against the
// scenario's retry_window_ms (docs/faults.md, "Dedup state that ages").
#include "check_util.h"

using namespace idem;
using namespace idem::testing;
using Catch::Matchers::Contains;

namespace {

/// Events 1 (100) and 2 (300) to w1, applied and acknowledged by c1; then an age fault that did `aged`;
/// then the producer retries event 1 in phase 2 and c1 applies it again (`twice`) or skips it.
std::vector<Op> agedRun(const Scenario& s, ops::Aged aged, bool twice) {
  HistoryBuilder b(s);
  b.initial(balances(0));
  auto entries = sendWallet(b, {100, 300}, {1, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", entries);
  for (const auto& e : entries) applySimply(b, "c1", e, e == entries[0] ? 100 : 300);
  b.h.append("c1", ops::FaultOp{Fault::parse("age:after:XACK#2", "test"), 0, aged});
  const std::string retry = b.send(1, {{"wallet", "w1"}, {"amount", "100"}}, 2);
  b.read("c1", "XREADGROUP", {retry});
  if (twice) applySimply(b, "c1", retry, 100);
  else b.ack("c1", {retry});
  b.finalOp(balances(twice ? 500 : 400));
  return b.ops();
}

ops::Aged expiredAfter(int64_t ms) {
  ops::Aged a;
  a.ms = ms;
  a.keys = true;
  a.expired = 2;
  return a;
}

} // namespace

TEST_CASE("dedup window: a retry within the window applied again is dedup-window", "[dedup-window]") {
  Scenario s = builtin("wallet");
  REQUIRE(s.retryWindowMs == 60000);
  const auto r = result(checkAll(s, agedRun(s, expiredAfter(60000), true)), "invariant:balance");
  REQUIRE(r.verdict == Verdict::Fail);
  REQUIRE(r.violations.size() == 1);
  const Violation& v = r.violations[0];
  CHECK(v.kind == "dedup-window");
  CHECK(v.events == std::vector<int>{1});
  CHECK_THAT(v.message, Contains("event 1 applied twice"));
  CHECK_THAT(v.message, Contains("the retry was sent 60000 ms of simulated time after it"));
  CHECK_THAT(v.message, Contains("within the producer's retry window of 60000 ms"));
  CHECK_THAT(v.message, Contains("applied again once its dedup state had aged 60000 ms"));
  CHECK_THAT(v.message, Contains("2 keys expired, 0 rows pruned"));
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "retention-shorter-than-window");
  CHECK(v.pattern->explanation == "age:after:XACK#2 (2 keys expired, 0 rows pruned) removed the dedup state of event 1 "
                                  "after 60000 ms of simulated time, while the producer may retry for 60000 ms; its retry "
                                  "then took effect again");
}

TEST_CASE("dedup window: a retry past the window may be applied again or not", "[dedup-window]") {
  Scenario s = builtin("wallet");
  for (bool twice : {true, false}) {
    INFO("applied twice: " << twice);
    const auto rs = checkAll(s, agedRun(s, expiredAfter(90000), twice));
    for (const auto& r : rs) {
      INFO(r.checker << ": " << r.error);
      CHECK(r.verdict == Verdict::Pass);
    }
  }
}

TEST_CASE("dedup window: a retry within the window that was deduplicated passes", "[dedup-window]") {
  Scenario s = builtin("wallet");
  CHECK(merge(checkAll(s, agedRun(s, expiredAfter(60000), false))) == Verdict::Pass);
}

TEST_CASE("dedup window: an ageing that removed nothing leaves an ordinary duplicate", "[dedup-window]") {
  Scenario s = builtin("wallet");
  ops::Aged nothing;
  nothing.ms = 60000;
  nothing.keys = true;
  const auto r = result(checkAll(s, agedRun(s, nothing, true)), "invariant:balance");
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations[0].kind == "duplicate"); // no dedup state was there to lose: the consumer keeps none
}

TEST_CASE("dedup window: without a declared window every aged retry must be deduplicated", "[dedup-window]") {
  Scenario s = builtin("wallet");
  s.retryWindowMs.reset();
  ops::Aged pruned;
  pruned.ms = 300000000;
  pruned.pruned = 2;
  pruned.prune = "DELETE FROM processed_messages WHERE processed_at < now() - '-299913600 milliseconds'::interval";
  const auto r = result(checkAll(s, agedRun(s, pruned, true)), "invariant:balance");
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations[0].kind == "dedup-window");
  CHECK_THAT(r.violations[0].message, Contains("declares no retry window"));
  CHECK_THAT(r.violations[0].message, Contains("0 keys expired, 2 rows pruned"));
}

TEST_CASE("dedup window: a retry sent at once but handled after the ageing must be deduplicated too", "[dedup-window]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s);
  b.initial(balances(0));
  auto entries = sendWallet(b, {100, 300}, {1, 2, 1});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", entries);
  applySimply(b, "c1", entries[0], 100);
  applySimply(b, "c1", entries[1], 300);
  b.h.append("c1", ops::FaultOp{Fault::parse("age:after:XACK#2:90000", "test"), 0, expiredAfter(90000)});
  applySimply(b, "c1", entries[2], 100);
  b.finalOp(balances(500));
  const auto r = result(checkAll(s, b.ops()), "invariant:balance");
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations[0].kind == "dedup-window"); // sent within the window: its handling 90 s later changes nothing
  CHECK_THAT(r.violations[0].message, Contains("the retry was sent 0 ms of simulated time after it"));
  CHECK_THAT(r.violations[0].message, Contains("had aged 90000 ms"));
}

TEST_CASE("dedup window: retries with no ageing after the event's first delivery are ordinary ones", "[dedup-window]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s);
  b.initial(balances(0));
  auto entries = sendWallet(b, {100, 300}, {1, 2, 1});
  b.spawn("c1");
  b.h.append("c1", ops::FaultOp{Fault::parse("age:after:XREADGROUP#1", "test"), 0, expiredAfter(60000)});
  b.read("c1", "XREADGROUP", entries);
  for (size_t i = 0; i < entries.size(); ++i) applySimply(b, "c1", entries[i], i == 1 ? 300 : 100);
  b.finalOp(balances(500));
  const auto r = result(checkAll(s, b.ops()), "invariant:balance");
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations[0].kind == "duplicate"); // the ageing came before anything was marked
}
