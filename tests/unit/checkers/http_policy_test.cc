// The HTTP policy's declarations beyond the first answer (checkers/http_policy.cc), on histories written by
// hand, each under the policy that makes it right and the one that makes it wrong: a stored 5xx
// (replay_5xx), a retry in flight under "wait", a retry within and after the retention (aged_ms), and a
// retry with its fields reordered under each payload_equivalence.
#include "check_util.h"

#include <set>

using namespace idem;
using namespace idem::testing;

namespace http_policy_test {

std::set<std::string> kindsOf(const std::vector<CheckResult>& rs) {
  std::set<std::string> out;
  for (const auto& r : rs)
    for (const auto& v : r.violations) out.insert(v.kind);
  return out;
}

const std::string kFirstAnswer = R"({"id":1,"status":"created"})";
const std::string kFailed = R"({"error":"order failed"})";

Scenario ordersWith(const std::function<void(HttpPolicy&)>& f) {
  Scenario s = builtin("orders");
  f(s.http->policy);
  return s;
}

const Scenario& stored5xx() {
  static const Scenario s = ordersWith([](HttpPolicy& p) { p.replay5xx = true; });
  return s;
}

} // namespace http_policy_test

using namespace http_policy_test;

TEST_CASE("http policy checkers: replay_5xx, a retry gets the stored 5xx again, never an execution", "[http]") {
  {
    HttpHistoryBuilder h(1); // the 500 stored and replayed: the key's definite answer
    h.answer(h.request(1, 1), 500, kFailed);
    h.answer(h.request(1, 1, "settle"), 500, kFailed);
    CHECK(merge(judge(h, {}, 1000, "", stored5xx())) == Verdict::Pass);
  }
  {
    HttpHistoryBuilder h(1); // the same history where 5xx answers are not stored: the key never got an answer
    h.answer(h.request(1, 1), 500, kFailed);
    h.answer(h.request(1, 1, "settle"), 500, kFailed);
    CHECK(kindsOf(judge(h, {}, 1000)) == std::set<std::string>{"no-answer"});
  }
  {
    HttpHistoryBuilder h(1); // a retry after the 500 executed
    h.answer(h.request(1, 1), 500, kFailed);
    h.answer(h.request(1, 1, "retry"), 201, kFirstAnswer, "/orders/1");
    auto rs = judge(h, {{1, 1}}, 999, "", stored5xx());
    CHECK(kindsOf(rs) == std::set<std::string>{"executed-after-5xx"});
    const auto& v = result(rs, "http:replay").violations.at(0);
    CHECK_THAT(v.message, Catch::Matchers::Contains("r2 retried key 1 after r1 was answered 500, and it executed"));
  }
  {
    HttpHistoryBuilder h(1); // ... which is today's right behaviour when 5xx answers are not stored
    h.answer(h.request(1, 1), 500, kFailed);
    h.answer(h.request(1, 1, "retry"), 201, kFirstAnswer, "/orders/1");
    CHECK(merge(judge(h, {{1, 1}}, 999)) == Verdict::Pass);
  }
  HttpHistoryBuilder h(1); // another 5xx than the stored one
  h.answer(h.request(1, 1), 500, kFailed);
  h.answer(h.request(1, 1, "settle"), 503, R"({"error":"database unavailable"})");
  auto rs = judge(h, {}, 1000, "", stored5xx());
  CHECK(kindsOf(rs) == std::set<std::string>{"replay-mismatch"});
  CHECK_THAT(result(rs, "http:replay").violations.at(0).message, Catch::Matchers::Contains("after r1 was answered 500 and got 503"));
}

TEST_CASE("http policy checkers: in_flight wait, a request that overlapped its key's first gets its answer", "[http]") {
  const Scenario wait = ordersWith([](HttpPolicy& p) { p.inFlight = 0; });
  {
    HttpHistoryBuilder h(1); // r2 arrived while r1 ran, waited, and got r1's answer
    int a = h.request(1, 1), b = h.request(1, 1, "retry");
    h.answer(a, 201, kFirstAnswer, "/orders/1");
    h.answer(b, 201, kFirstAnswer, "/orders/1");
    CHECK(merge(judge(h, {{1, 1}}, 999, "", wait)) == Verdict::Pass);
  }
  {
    HttpHistoryBuilder h(1); // r2 was told 409: the declared policy is to wait
    int a = h.request(1, 1), b = h.request(1, 1, "retry");
    h.answer(a, 201, kFirstAnswer, "/orders/1");
    h.answer(b, 409, R"({"error":"request in progress"})");
    auto rs = judge(h, {{1, 1}}, 999, "", wait);
    CHECK(kindsOf(rs) == std::set<std::string>{"in-flight-rejected"});
    CHECK_THAT(result(rs, "http:replay").violations.at(0).message,
               Catch::Matchers::Contains("r2 sent key 1 while another request of it ran and got 409"));
  }
  {
    HttpHistoryBuilder h(1); // ... which the 409 policy declares
    int a = h.request(1, 1), b = h.request(1, 1, "retry");
    h.answer(a, 201, kFirstAnswer, "/orders/1");
    h.answer(b, 409, R"({"error":"request in progress"})");
    CHECK(merge(judge(h, {{1, 1}}, 999)) == Verdict::Pass);
  }
  {
    HttpHistoryBuilder h(1); // r2 did not wait: it executed on its own
    int a = h.request(1, 1), b = h.request(1, 1, "retry");
    h.answer(a, 201, kFirstAnswer, "/orders/1");
    h.answer(b, 201, R"({"id":2,"status":"created"})", "/orders/2");
    CHECK(kindsOf(judge(h, {{1, 2}}, 998, "", wait)).count("double-effect") == 1);
  }
  for (int64_t waitedMs : {1200, 300}) { // r2 gave up with 409 while r1 still ran: after the lease, or before it
    INFO(waitedMs);
    HttpHistoryBuilder g(1);
    int first = g.request(1, 1), second = g.request(1, 1, "retry");
    g.answer(second, 409, R"({"error":"request in progress"})");
    g.answer(first, 201, kFirstAnswer, "/orders/1");
    g.finalOp({{1, 1}}, 999);
    auto ops = g.ops();
    for (auto& op : ops) {
      op.time_us = op.index * 1000;
      if (auto* r = op.as<ops::Response>(); r && r->id == second) op.time_us += waitedMs * 1000;
      if (auto* r = op.as<ops::Response>(); r && r->id == first) op.time_us += 2000000;
    }
    const auto rs = checkAll(wait, ops);
    CHECK(kindsOf(rs).count("in-flight-rejected") == (waitedMs < 1000 ? 1u : 0u));
  }
  // r2 got r1's answer, but 3 s after r1 had its own: past the 1000 ms lease (and the 500 ms margin).
  HttpHistoryBuilder h(1);
  int a = h.request(1, 1), b = h.request(1, 1, "retry");
  h.answer(a, 201, kFirstAnswer, "/orders/1");
  h.answer(b, 201, kFirstAnswer, "/orders/1");
  h.finalOp({{1, 1}}, 999);
  auto ops = h.ops();
  for (auto& op : ops)
    if (auto* r = op.as<ops::Response>(); r && r->id == b) op.time_us += 3000000;
  auto rs = checkAll(wait, ops);
  CHECK(kindsOf(rs) == std::set<std::string>{"wait-past-lease"});
  CHECK(result(rs, "http:replay").violations.at(0).expected == 1000);
  // The same 3 s, but a fault (a delay at the server) fell between the two answers: not the server's wait.
  HttpHistoryBuilder d(1);
  a = d.request(1, 1), b = d.request(1, 1, "retry");
  d.answer(a, 201, kFirstAnswer, "/orders/1");
  d.fault("delay:after:SELECT#2:3000");
  d.answer(b, 201, kFirstAnswer, "/orders/1");
  d.finalOp({{1, 1}}, 999);
  ops = d.ops();
  for (auto& op : ops)
    if (auto* r = op.as<ops::Response>(); r && r->id == b) op.time_us += 3000000;
  CHECK(merge(checkAll(wait, ops)) == Verdict::Pass);
}

TEST_CASE("http policy checkers: a retry within the retention is deduplicated, one after it may execute", "[http]") {
  const Scenario second = ordersWith([](HttpPolicy& p) { p.retentionMs = 1000; });
  {
    HttpHistoryBuilder h(1); // 500 ms later, within the 1000 ms retention: executed again
    h.answer(h.request(1, 1), 201, kFirstAnswer, "/orders/1");
    h.answer(h.request(1, 1, "retry", 0, false, 500), 201, R"({"id":2,"status":"created"})", "/orders/2");
    auto rs = judge(h, {{1, 2}}, 998, "", second);
    CHECK(kindsOf(rs) == std::set<std::string>{"forgotten-within-retention", "replay-mismatch"});
    CHECK_THAT(result(rs, "http:exactly-once").violations.at(0).message,
               Catch::Matchers::Contains("r2 was sent 500 ms after the key's last request, within the declared retention of 1000 ms"));
  }
  {
    HttpHistoryBuilder h(1); // 500 ms later, replayed
    h.answer(h.request(1, 1), 201, kFirstAnswer, "/orders/1");
    h.answer(h.request(1, 1, "retry", 0, false, 500), 201, kFirstAnswer, "/orders/1");
    CHECK(merge(judge(h, {{1, 1}}, 999, "", second)) == Verdict::Pass);
  }
  HttpHistoryBuilder h(1); // 1000 ms later: the key may be forgotten
  h.answer(h.request(1, 1), 201, kFirstAnswer, "/orders/1");
  h.answer(h.request(1, 1, "retry", 0, false, 1000), 201, R"({"id":2,"status":"created"})", "/orders/2");
  CHECK(merge(judge(h, {{1, 2}}, 998, "", second)) == Verdict::Pass);
}

TEST_CASE("http policy checkers: a reordered retry is the same payload under form or json, another under bytes",
          "[http]") {
  const Scenario form = ordersWith([](HttpPolicy& p) { p.payloadEquivalence = "form"; });
  const Scenario bytes = ordersWith([](HttpPolicy& p) { p.payloadEquivalence = "bytes"; });
  auto replayed = [] {
    auto h = std::make_unique<HttpHistoryBuilder>(1);
    h->answer(h->request(1, 1), 201, kFirstAnswer, "/orders/1");
    h->answer(h->request(1, 1, "retry", 0, false, 0, true), 201, kFirstAnswer, "/orders/1");
    return h;
  };
  auto rejected = [] {
    auto h = std::make_unique<HttpHistoryBuilder>(1);
    h->answer(h->request(1, 1), 201, kFirstAnswer, "/orders/1");
    h->answer(h->request(1, 1, "retry", 0, false, 0, true), 422, R"({"error":"mismatch"})");
    return h;
  };
  CHECK(merge(judge(*replayed(), {{1, 1}}, 999, "", form)) == Verdict::Pass);
  CHECK(merge(judge(*replayed(), {{1, 1}}, 999)) == Verdict::Pass); // json, orders' default
  CHECK(merge(judge(*rejected(), {{1, 1}}, 999, "", bytes)) == Verdict::Pass);
  auto rs = judge(*rejected(), {{1, 1}}, 999, "", form);
  CHECK(kindsOf(rs) == std::set<std::string>{"reordered-rejected"});
  CHECK_THAT(result(rs, "http:mismatch").violations.at(0).message,
             Catch::Matchers::Contains("under payload_equivalence \"form\" that is the same payload"));
  rs = judge(*replayed(), {{1, 1}}, 999, "", bytes);
  CHECK(kindsOf(rs) == std::set<std::string>{"reordered-accepted"});
  CHECK(result(rs, "http:mismatch").violations.at(0).expected == 422);
}
