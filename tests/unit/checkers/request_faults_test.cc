// Faults at an HTTP server's steps told by the requests they hit (checkers/request_faults.h), on histories
// written by hand: one request in flight, a burst's copies in flight together, and a burst's 5xx that a
// fault explains.
#include "check_util.h"

#include "checkers/request_faults.h"

#include <functional>
#include <vector>

using namespace idem;
using namespace idem::testing;
using Catch::Matchers::Contains;

TEST_CASE("request faults: each fault with the requests in flight then, in the order written", "[http]") {
  HttpHistoryBuilder o(2);
  o.answer(o.request(1, 1), 201, "{\"order\":1}");
  o.fault("delay:before:BEGIN#1:60"); // between requests: none in flight
  int a = o.request(2, 2, "original", 1), b = o.request(2, 2, "original", 2);
  o.sql("BEGIN");
  o.fault("drop:after:BEGIN#1");
  o.answer(a, 503, "{\"error\":\"unavailable\"}");
  o.answer(b, 201, "{\"order\":2}");
  auto fs = detail::requestFaults(o.ops());
  REQUIRE(fs.size() == 2);
  CHECK(fs[0].inFlight.empty());
  CHECK(fs[0].request == nullptr);
  REQUIRE(fs[1].inFlight.size() == 2);
  CHECK(fs[1].request->id == b);
  CHECK(detail::faultsOnKey(fs, 1).empty());
  CHECK(detail::faultsOnKey(fs, 2) == "r2 (copy 1 of a burst of key 2) and r3 (copy 2 of a burst of key 2) were in "
                                     "flight when s1's connection dropped at drop:after:BEGIN#1");
  CHECK(detail::faultEvent(Fault::parse("after:COMMIT#1"), "s2") == "s2 was killed at after:COMMIT#1");
  CHECK(detail::faultEvent(Fault::parse("restart:after:COMMIT#1:pg"), "s1") == "PostgreSQL restarted at "
                                                                                "restart:after:COMMIT#1:pg");
  CHECK(detail::faultEvent(Fault::parse("pause:before:COMMIT#1"), "s1") == "s1 paused (SIGSTOP) at pause:before:COMMIT#1");
}

namespace {

/// After what `before` writes, r1 in flight meets restart:after:BEGIN#1:pg and gets a 500 (`atRestart` writes
/// what comes with the restart); then a burst of two: one copy runs on a new connection (201), the other
/// meets a dead one (500). The checkers' results.
std::vector<CheckResult> restartThenBurst(const std::function<void(HttpHistoryBuilder&)>& before,
                                          const std::function<void(HttpHistoryBuilder&)>& atRestart) {
  HttpHistoryBuilder o(1);
  before(o);
  int r1 = o.request(1, 1, "original");
  o.fault("restart:after:BEGIN#1:pg");
  atRestart(o);
  o.answer(r1, 500, "Internal Server Error");
  int a = o.request(1, 1, "retry", 1), b = o.request(1, 1, "retry", 2);
  o.sql("BEGIN", "", 3);
  o.answer(b, 201, "{\"order\":1}", "/orders/1");
  o.answer(a, 500, "Internal Server Error");
  o.finalOp({{1, 1}}, 999);
  auto ops = o.ops();
  for (auto& op : ops) op.time_us = op.index * 1000; // the restart at 4 ms or later
  return checkAll(builtin("orders"), ops);
}

} // namespace

TEST_CASE("request faults: a copy answered 5xx on a connection a restart before it killed is no burst error", "[http]") {
  // The server's pool held connections to PostgreSQL; the restart kills them. A server that had sent
  // PostgreSQL nothing before the restart held no connection to it: that 500 has no excuse.
  for (bool used : {true, false}) {
    INFO(used);
    const auto rs = restartThenBurst(
        [used](HttpHistoryBuilder& o) {
          o.sql("SELECT", "SELECT 1", 1);
          if (used) o.h.append("s1", [] {
            ops::Step s;
            s.server = "pg";
            s.conn = 2;
            s.verb = "BEGIN";
            s.k = 9;
            s.tReqUs = 1; // sent before the restart, recorded after it
            return s;
          }());
        },
        [](HttpHistoryBuilder&) {});
    CHECK((violationOf(rs, "burst-error") == nullptr) == used);
  }
}

TEST_CASE("request faults: a 5xx after a restart of a server whose pool opened connections at start-up, with no "
          "request yet, is no burst error", "[http]") {
  // psycopg_pool's min_size: the process holds connections from its start, and a restart kills them unseen.
  for (bool opened : {true, false}) {
    INFO(opened);
    const auto rs = restartThenBurst([](HttpHistoryBuilder&) {}, [opened](HttpHistoryBuilder& o) {
      if (opened) o.h.append("s1", ops::Note::openAtRestart("s1", 2, "PostgreSQL", "restart:after:BEGIN#1:pg"));
    });
    CHECK((violationOf(rs, "burst-error") == nullptr) == opened);
  }
}

TEST_CASE("request faults: a burst's copy answered 503 while a fault hit the server is no burst error", "[http]") {
  for (bool faulted : {true, false}) {
    INFO(faulted);
    HttpHistoryBuilder o(1);
    int a = o.request(1, 1, "original", 1), b = o.request(1, 1, "original", 2);
    o.sql("BEGIN");
    if (faulted) o.fault("drop:after:BEGIN#1");
    o.answer(a, 503, "{\"error\":\"unavailable\"}");
    o.answer(b, 201, "{\"order\":1}", "/orders/1");
    auto rs = judge(o, {{1, 1}}, 999);
    const Violation* v = violationOf(rs, "burst-error");
    CHECK((v == nullptr) == faulted);
    if (v) CHECK_THAT(v->message, Contains("r1, copy 1 of a burst with key 1, got 503"));
  }
}
