// The HTTP checkers (checkers/http.cc) on histories written by hand: what each invariant names, and the
// answers that are right although they look wrong (a 409 to a copy that overlapped another, a mismatch
// that won a race on a fresh key, a key the server bound to another payload first).
#include "check_util.h"

#include <set>

using namespace idem;
using namespace idem::testing;

namespace {

std::set<std::string> kinds(const std::vector<CheckResult>& rs) {
  std::set<std::string> out;
  for (const auto& r : rs)
    for (const auto& v : r.violations) out.insert(v.kind);
  return out;
}

const std::string kCreated = R"({"id":1,"status":"created"})";

} // namespace

TEST_CASE("http checkers: a faithful replay passes, a second execution is a double effect and an unfaithful replay",
          "[http]") {
  {
    HttpHistoryBuilder h(1);
    h.answer(h.request(1, 1), 201, kCreated, "/orders/1");
    h.answer(h.request(1, 1, "retry"), 201, kCreated, "/orders/1");
    auto rs = judge(h, {{1, 1}}, 999);
    CHECK(merge(rs) == Verdict::Pass);
  }
  HttpHistoryBuilder h(1);
  h.answer(h.request(1, 1), 201, kCreated, "/orders/1");
  h.answer(h.request(1, 1, "retry"), 201, R"({"id":2,"status":"created"})", "/orders/2");
  auto rs = judge(h, {{1, 2}}, 998);
  CHECK(kinds(rs) == std::set<std::string>{"double-effect", "replay-mismatch"});
  CHECK(result(rs, "http:ledger").verdict == Verdict::Pass); // two orders, two stock changes: consistent
  const auto& v = result(rs, "http:replay").violations.at(0);
  CHECK_THAT(v.message, Catch::Matchers::Contains("Location /orders/2 where r1 got /orders/1"));
}

TEST_CASE("http checkers: the stock moved without an order is a ledger violation", "[http]") {
  HttpHistoryBuilder h(2);
  h.answer(h.request(1, 1), 201, kCreated, "/orders/1");
  auto rs = judge(h, {{1, 1}}, 990); // qty 1 taken, 10 gone
  CHECK(kinds(rs) == std::set<std::string>{"ledger"});
  CHECK(result(rs, "http:ledger").violations.at(0).expected == 999);
}

TEST_CASE("http checkers: a mismatch answered 2xx or with another status than the policy's", "[http]") {
  {
    HttpHistoryBuilder h(2);
    h.answer(h.request(1, 1), 201, kCreated, "/orders/1");
    h.answer(h.request(1, 2, "mismatch"), 201, kCreated, "/orders/1");
    auto rs = judge(h, {{1, 1}}, 999);
    CHECK(kinds(rs) == std::set<std::string>{"mismatch-accepted"});
    CHECK_THAT(result(rs, "http:mismatch").violations.at(0).message, Catch::Matchers::Contains("the answer of r1"));
  }
  {
    HttpHistoryBuilder h(2);
    h.answer(h.request(1, 1), 201, kCreated, "/orders/1");
    h.answer(h.request(1, 2, "mismatch"), 409, R"({"error":"conflict"})");
    CHECK(kinds(judge(h, {{1, 1}}, 999)) == std::set<std::string>{"mismatch-status"}); // orders declares 422
  }
  {
    HttpHistoryBuilder h(2);
    h.answer(h.request(1, 1), 201, kCreated, "/orders/1");
    h.answer(h.request(1, 2, "mismatch"), 422, R"({"error":"mismatch"})");
    CHECK(merge(judge(h, {{1, 1}}, 999)) == Verdict::Pass);
  }
}

TEST_CASE("http checkers: a mismatch with another key's own payload is judged by what is beyond that key's effect",
          "[http]") {
  // Key 2's payload reused under key 1 (a schedule file may write it): the two carry the same reference.
  auto history = [](int mismatchStatus) {
    HttpHistoryBuilder h(2);
    h.answer(h.request(1, 1), 201, kCreated, "/orders/1");
    h.answer(h.request(2, 2), 201, R"({"id":2,"status":"created"})", "/orders/2");
    h.answer(h.request(1, 2, "mismatch"), mismatchStatus, mismatchStatus == 201 ? kCreated : R"({"error":"mismatch"})",
             mismatchStatus == 201 ? "/orders/1" : "");
    return h;
  };
  {
    auto h = history(422); // rejected, key 2's one effect: right
    CHECK(merge(judge(h, {{1, 1}, {2, 1}}, 997)) == Verdict::Pass);
  }
  {
    auto h = history(422); // rejected, but payload 2 took effect twice
    auto rs = judge(h, {{1, 1}, {2, 2}}, 995);
    CHECK(kinds(rs).count("mismatch-accepted") == 1);
    const auto& v = result(rs, "http:mismatch").violations.at(0);
    CHECK_THAT(v.message, Catch::Matchers::Contains("and got 422; that payload took effect too"));
    CHECK(v.observed == 422);
  }
  {
    auto h = history(201);
    CHECK(kinds(judge(h, {{1, 1}, {2, 1}}, 997)).count("mismatch-accepted") == 1);
  }
}

TEST_CASE("http checkers: a mismatch refused as declared is not blamed for what its payload's own key did twice",
          "[http]") {
  // Key 2's burst of 4 copies, each executed (a check-then-insert server): 4 effects of payload 2. Key 1
  // reused with payload 2 and refused 422: key 2's double effect explains all 4; nothing shows r2 took effect.
  HttpHistoryBuilder h(2);
  h.answer(h.request(1, 1), 201, kCreated, "/orders/1");
  h.answer(h.request(1, 2, "mismatch"), 422, R"({"error":"mismatch"})");
  for (int copy = 1; copy <= 4; ++copy) {
    const int id = h.request(2, 2, "original", copy);
    h.answer(id, 201, fmt::format(R"({{"id":{},"status":"created"}})", copy + 1), fmt::format("/orders/{}", copy + 1));
  }
  auto rs = judge(h, {{1, 1}, {2, 4}}, 995);
  CHECK(kinds(rs).count("mismatch-accepted") == 0);
  CHECK(kinds(rs).count("double-effect") == 1);
  // Beyond what key 2's requests could have done, the excess is the mismatch's again.
  HttpHistoryBuilder more(2);
  more.answer(more.request(1, 1), 201, kCreated, "/orders/1");
  more.answer(more.request(1, 2, "mismatch"), 422, R"({"error":"mismatch"})");
  more.answer(more.request(2, 2), 201, R"({"id":2,"status":"created"})", "/orders/2");
  CHECK(kinds(judge(more, {{1, 1}, {2, 2}}, 996)).count("mismatch-accepted") == 1);
}

TEST_CASE("http checkers: no answer from a server that opened no connection after a restart says so", "[http]") {
  for (const std::string& outcome : {ops::Note::noNewConnection("s1"), std::string("s1 reconnected")}) {
    HttpHistoryBuilder h(1);
    h.fault("restart:before:SELECT#4:pg");
    h.h.append("s1", ops::Note::afterRestart("PostgreSQL", "restart:before:SELECT#4:pg", outcome));
    h.answer(h.request(1, 1), 503, R"({"error":"database unavailable"})");
    h.answer(h.request(1, 1, "settle"), 503, R"({"error":"database unavailable"})");
    auto rs = judge(h, {}, 1000);
    REQUIRE(kinds(rs) == std::set<std::string>{"no-answer"});
    const std::string message = result(rs, "http:liveness").violations.at(0).message;
    INFO(message);
    CHECK((message.find("s1 made no new connection (its connections broke and it opened none") != std::string::npos) ==
          (outcome == "s1 made no new connection"));
  }
}

TEST_CASE("http checkers: in a race on a fresh key either payload may win", "[http]") {
  // A burst of key 1: copies 1 and 2 carry payload 1, copy 3 payload 2; payload 2 won.
  HttpHistoryBuilder h(2);
  int a = h.request(1, 1, "original", 1), b = h.request(1, 1, "retry", 2), c = h.request(1, 2, "mismatch", 3);
  h.answer(c, 201, kCreated, "/orders/1");
  h.answer(a, 409, R"({"error":"in progress"})"); // overlapped the winner: in flight
  h.answer(b, 422, R"({"error":"mismatch"})");
  int settle = h.request(1, 1, "settle");
  h.answer(settle, 422, R"({"error":"mismatch"})");
  auto rs = judge(h, {{2, 1}}, 998);
  INFO(nlohmann::json(rs).dump());
  CHECK(merge(rs) == Verdict::Pass);
}

TEST_CASE("http checkers: a key answered 409 to the end is stuck, one with no answer is not live", "[http]") {
  {
    HttpHistoryBuilder h(1);
    h.lost(h.request(1, 1)); // the server was killed
    for (int i = 0; i < 3; ++i) h.answer(h.request(1, 1, "settle"), 409, R"({"error":"in progress"})");
    auto rs = judge(h, {{1, 1}}, 999);
    CHECK(kinds(rs) == std::set<std::string>{"stuck-key"});
  }
  {
    HttpHistoryBuilder h(1);
    h.lost(h.request(1, 1));
    h.answer(h.request(1, 1, "settle"), 503, R"({"error":"db"})");
    CHECK(kinds(judge(h, {}, 1000)) == std::set<std::string>{"no-answer"});
  }
  {
    HttpHistoryBuilder h(1); // the retry after the crash executed once: live, one effect
    h.lost(h.request(1, 1));
    h.answer(h.request(1, 1, "settle"), 201, kCreated, "/orders/1");
    CHECK(merge(judge(h, {{1, 1}}, 999)) == Verdict::Pass);
  }
}

TEST_CASE("http checkers: a request without a key must get the declared status and take no effect", "[http]") {
  HttpHistoryBuilder h(2);
  h.answer(h.request(0, 1, "no-key"), 400, R"({"error":"key"})");
  h.answer(h.request(0, 2, "no-key"), 201, kCreated, "/orders/1");
  auto rs = judge(h, {{2, 1}}, 998);
  CHECK(kinds(rs) == std::set<std::string>{"missing-key-accepted"});
  CHECK(result(rs, "http:missing-key").violations.size() == 1);
}

TEST_CASE("http checkers: a burst copy answered 5xx is a burst error, one answered in flight is not", "[http]") {
  HttpHistoryBuilder h(1);
  int a = h.request(1, 1, "original", 1), b = h.request(1, 1, "retry", 2), c = h.request(1, 1, "retry", 3);
  h.answer(a, 201, kCreated, "/orders/1");
  h.answer(b, 409, R"({"error":"in progress"})");
  h.answer(c, 500, R"({"error":"boom"})");
  auto rs = judge(h, {{1, 1}}, 999);
  CHECK(kinds(rs) == std::set<std::string>{"burst-error"});
}

TEST_CASE("http checkers: after the retention a key may execute again, before it never", "[http]") {
  {
    HttpHistoryBuilder h(1);
    h.answer(h.request(1, 1), 201, kCreated, "/orders/1");
    h.answer(h.request(1, 1, "retry", 0, true), 201, R"({"id":2,"status":"created"})", "/orders/2");
    CHECK(merge(judge(h, {{1, 2}}, 998)) == Verdict::Pass);
  }
  HttpHistoryBuilder h(1);
  h.answer(h.request(1, 1), 201, kCreated, "/orders/1");
  h.answer(h.request(1, 1, "retry", 0, true), 201, R"({"id":2,"status":"created"})", "/orders/2");
  h.answer(h.request(1, 1, "retry"), 201, R"({"id":3,"status":"created"})", "/orders/3");
  auto rs = judge(h, {{1, 3}}, 997);
  CHECK(kinds(rs).count("double-effect") == 1);
}

TEST_CASE("http checkers: the declared created status is the only success of a fresh key", "[http]") {
  {
    HttpHistoryBuilder h(1); // a server that answers 404 to every POST
    h.answer(h.request(1, 1), 404, "");
    h.answer(h.request(1, 1, "retry"), 404, "");
    auto rs = judge(h, {}, 1000);
    CHECK(kinds(rs) == std::set<std::string>{"unexpected-status"});
    const auto& v = result(rs, "http:status").violations.at(0);
    CHECK(v.observed == 404);
    CHECK(v.expected == 201);
    CHECK_THAT(v.message, Catch::Matchers::Contains("r1 sent key 1 with its own payload and got 404"));
  }
  {
    HttpHistoryBuilder h(1); // executed, but answered 200 where the scenario declares 201
    h.answer(h.request(1, 1), 200, kCreated, "/orders/1");
    h.answer(h.request(1, 1, "retry"), 200, kCreated, "/orders/1");
    auto rs = judge(h, {{1, 1}}, 999);
    CHECK(kinds(rs) == std::set<std::string>{"unexpected-status"});
    CHECK(result(rs, "http:status").violations.size() == 1); // the first answer; the replay is faithful to it
  }
  {
    HttpHistoryBuilder h(1); // the declared answers on the way: in flight, a server error, then created
    int a = h.request(1, 1);
    h.lost(a);
    h.answer(h.request(1, 1, "settle"), 409, R"({"error":"in progress"})");
    h.answer(h.request(1, 1, "settle"), 503, R"({"error":"db"})");
    h.answer(h.request(1, 1, "settle"), 201, kCreated, "/orders/1");
    CHECK(merge(judge(h, {{1, 1}}, 999)) == Verdict::Pass);
  }
  {
    HttpHistoryBuilder h(2); // payload 2 raced payload 1 on the fresh key and bound it first: 422 is a right answer
    int own = h.request(1, 1);
    int other = h.request(1, 2, "mismatch");
    h.answer(own, 422, R"({"error":"mismatch"})");
    h.lost(other);
    h.answer(h.request(1, 1, "settle"), 422, R"({"error":"mismatch"})");
    CHECK(merge(judge(h, {}, 1000)) == Verdict::Pass);
  }
}

TEST_CASE("http checkers: a run whose client did not get its answers is never a pass", "[http]") {
  {
    HttpHistoryBuilder h(1); // the server never became ready: no request was written
    auto rs = judge(h, {}, 1000, "start-timeout");
    CHECK(merge(rs) == Verdict::Unknown);
    CHECK_THAT(result(rs, "http:liveness").error,
               Catch::Matchers::Contains("the run ended at a limit before the client had every answer (server s1 did not"));
  }
  {
    HttpHistoryBuilder h(1); // no limit recorded, and still the schedule's request was never written
    auto rs = judge(h, {}, 1000);
    CHECK(merge(rs) == Verdict::Unknown);
    CHECK_THAT(result(rs, "http:liveness").error, Catch::Matchers::Contains("the client never wrote 1 of the schedule's requests (send 1)"));
  }
  {
    HttpHistoryBuilder h(2); // a request without a key that got no answer: its status can't be judged
    h.answer(h.request(1, 1), 201, kCreated, "/orders/1");
    h.lost(h.request(0, 2, "no-key"));
    auto rs = judge(h, {{1, 1}}, 999);
    CHECK(merge(rs) == Verdict::Unknown);
    CHECK_THAT(result(rs, "http:liveness").error, Catch::Matchers::Contains("r2 (no-key 2) got no answer (reset)"));
  }
  {
    HttpHistoryBuilder h(2); // ... unless the server was killed while it was in flight
    h.answer(h.request(1, 1), 201, kCreated, "/orders/1");
    int r = h.request(0, 2, "no-key");
    h.kill("after:INSERT#2");
    h.lost(r);
    CHECK(merge(judge(h, {{1, 1}}, 999)) == Verdict::Pass);
  }
  {
    HttpHistoryBuilder h(1); // an answer that never ended
    h.lost(h.request(1, 1), "too-large");
    h.lost(h.request(1, 1, "settle"), "too-large");
    auto rs = judge(h, {}, 1000);
    CHECK(merge(rs) == Verdict::Unknown);
    CHECK_THAT(result(rs, "http:liveness").error, Catch::Matchers::Contains("went on past the 64 MiB"));
  }
}

TEST_CASE("http checkers: replays compared as the policy says: as JSON by default, byte for byte on request", "[http]") {
  const std::string first = R"({"id":1,"ref":"ref-1","status":"created"})";
  const std::string jsonb = R"({"id": 1, "ref": "ref-1", "status": "created"})"; // how jsonb prints it back
  {
    HttpHistoryBuilder h(1);
    h.answerJson(h.request(1, 1), 201, first, "/orders/1");
    h.answerJson(h.request(1, 1, "retry"), 201, jsonb, "/orders/1");
    auto rs = judge(h, {{1, 1}}, 999);
    CHECK(merge(rs) == Verdict::Pass);
    const auto& notes = result(rs, "http:replay").notes;
    REQUIRE(notes.size() == 1);
    CHECK_THAT(notes[0], Catch::Matchers::Contains("r2's answer to key 1 is r1's as JSON, in other bytes"));
  }
  {
    HttpHistoryBuilder h(1); // another JSON value: a violation under either policy
    h.answerJson(h.request(1, 1), 201, first, "/orders/1");
    h.answerJson(h.request(1, 1, "retry"), 201, R"({"id": 1, "ref": "ref-1", "status": "created", "replayed": true})",
                 "/orders/1");
    auto rs = judge(h, {{1, 1}}, 999);
    CHECK(kinds(rs) == std::set<std::string>{"replay-mismatch"});
    CHECK_THAT(result(rs, "http:replay").violations.at(0).message, Catch::Matchers::Contains("another body than r1's (also as JSON)"));
  }
  Scenario bytes = builtin("orders");
  bytes.http->policy.replayEquivalence = "bytes";
  HttpHistoryBuilder h(1);
  h.answerJson(h.request(1, 1), 201, first, "/orders/1");
  h.answerJson(h.request(1, 1, "retry"), 201, jsonb, "/orders/1");
  auto rs = judge(h, {{1, 1}}, 999, "", bytes);
  CHECK(kinds(rs) == std::set<std::string>{"replay-mismatch"});
}

TEST_CASE("http checkers: answers that first differ past their short form are shown around the difference", "[http]") {
  const std::string head = R"({"id": 1, "ref": "ref-1", "customer": "alice", "sku": "sku-1", "qty": 1, )";
  HttpHistoryBuilder h(1);
  h.answerJson(h.request(1, 1), 201, head + R"("amount": 4500, "status": "created"})", "/orders/1");
  h.answerJson(h.request(1, 1, "retry"), 201, head + R"("amount": 4500.0, "status": "created"})", "/orders/1");
  auto rs = judge(h, {{1, 1}}, 999);
  REQUIRE(kinds(rs) == std::set<std::string>{"replay-mismatch"});
  const Violation& v = result(rs, "http:replay").violations.at(0);
  CHECK(v.expected != v.observed);
  CHECK_THAT(v.observed.get<std::string>(), Catch::Matchers::Contains("4500.0"));
  CHECK_THAT(v.message, Catch::Matchers::Contains("4500.0"));
}

TEST_CASE("http checkers: a double effect across replicas names the replica each request went to", "[http]") {
  HttpHistoryBuilder h(1);
  const int r1 = h.request(1, 1, "original", 1);
  h.to("s2");
  const int r2 = h.request(1, 1, "retry", 2);
  h.answer(r1, 201, kCreated, "/orders/1");
  h.answer(r2, 201, R"({"id":2,"status":"created"})", "/orders/2");
  auto rs = judge(h, {{1, 2}}, 998);
  const auto& v = result(rs, "http:exactly-once").violations.at(0);
  CHECK(v.kind == "double-effect");
  CHECK_THAT(v.message, Catch::Matchers::Contains("(2 requests with it: r1 (s1), r2 (s2))"));
}

TEST_CASE("http checkers: a lost effect whose COMMIT was answered ROLLBACK says so", "[http]") {
  // PDO's commit() takes any answer to COMMIT for success: a statement of the transaction had failed (here an
  // error answered instead of a DEALLOCATE), PostgreSQL answered the COMMIT with ROLLBACK, and the server
  // answered 201 for an order that does not exist.
  HttpHistoryBuilder h(1);
  const int r1 = h.request(1, 1);
  h.sql("BEGIN");
  h.sql("INSERT", "INSERT INTO orders (ref) VALUES ($1)", 1, {"orders"}, "INSERT 0 1");
  h.sql("COMMIT", "COMMIT", 1, {}, "ROLLBACK");
  h.answer(r1, 201, kCreated, "/orders/1");
  auto rs = judge(h, {{1, 0}}, 1000);
  CHECK(kinds(rs).count("lost-effect") == 1);
  const auto& v = result(rs, "http:exactly-once").violations.at(0);
  CHECK_THAT(v.message, Catch::Matchers::Contains("while r1 was in flight s1's COMMIT#1 was answered ROLLBACK"));
  // The same answer after a COMMIT that took effect is the old reading: the key's state without the effect.
  HttpHistoryBuilder ok(1);
  const int q1 = ok.request(1, 1);
  ok.sql("COMMIT", "COMMIT", 1, {}, "COMMIT");
  ok.answer(q1, 201, kCreated, "/orders/1");
  auto rs2 = judge(ok, {{1, 0}}, 1000);
  CHECK_THAT(result(rs2, "http:exactly-once").violations.at(0).message,
             Catch::Matchers::Contains("the key's state committed without the effect"));
}

TEST_CASE("http checkers: a lost effect whose COMMIT never reached PostgreSQL says the answer did not wait for it", "[http]") {
  // A server that writes its 201 and then awaits its COMMIT, killed before the COMMIT reached PostgreSQL:
  // the client got the 201 (read after the kill), nothing committed.
  HttpHistoryBuilder h(1);
  const int r1 = h.request(1, 1);
  h.orderKilledBeforeCommit();
  h.answer(r1, 201, kCreated, "/orders/1");
  auto rs = judge(h, {{1, 0}}, 1000);
  const auto& v = result(rs, "http:exactly-once").violations.at(0);
  CHECK(v.kind == "lost-effect");
  CHECK_THAT(v.message, Catch::Matchers::Contains("while r1 was in flight s1's COMMIT#1 never reached PostgreSQL (the "
                                                  "process was killed before it)"));
  CHECK_THAT(v.message, Catch::Matchers::Contains("without waiting for its COMMIT"));
  CHECK_THAT(v.message, !Catch::Matchers::Contains("committed without the effect"));
  // An error answered in the COMMIT's place, taken for success.
  HttpHistoryBuilder e(1);
  const int q1 = e.request(1, 1);
  e.sql("COMMIT", "COMMIT", 1, {}, "", ops::StepOutcome::Answered);
  e.answer(q1, 201, kCreated, "/orders/1");
  auto rs2 = judge(e, {{1, 0}}, 1000);
  CHECK_THAT(result(rs2, "http:exactly-once").violations.at(0).message,
             Catch::Matchers::Contains("s1's COMMIT#1 got an error in PostgreSQL's place"));
  // No COMMIT at all while it was in flight: nothing is claimed of the key's state.
  HttpHistoryBuilder none(1);
  const int n1 = none.request(1, 1);
  none.answer(n1, 201, kCreated, "/orders/1");
  auto rs3 = judge(none, {{1, 0}}, 1000);
  CHECK_THAT(result(rs3, "http:exactly-once").violations.at(0).message,
             Catch::Matchers::Contains("nothing the server committed while it was in flight holds it"));
}
