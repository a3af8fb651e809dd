// Deliveries that settle themselves (AMQP no-ack, XREADGROUP … NOACK): the broker counts each entry done as
// it sends it, so a kill before the effect loses it (checkers/patterns/ack_before_effect.cc). Seen by the
// tracker (the delivery's step acknowledges it) or unseen (pushes on their way when the process was killed:
// the final record's settled_unseen), the loss is `lost` with the anti-pattern named, never `stuck`.
#include "patterns_util.h"

#include <fmt/format.h>

#include <string>
#include <vector>

using namespace idem;
using namespace idem::testing;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

void credit(HistoryBuilder& b, const std::string& proc) {
  b.step(proc, "pg", "BEGIN");
  b.step(proc, "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
  b.step(proc, "pg", "COMMIT");
}

} // namespace

TEST_CASE("ack-before-effect: pushes that settle themselves, then a kill before the second COMMIT", "[patterns]") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s, {"before:COMMIT#2"});
  b.initial(balances(0));
  auto e = sendWallet(b, kAmounts, {1, 2, 3});
  b.spawn("c1");
  b.step("c1", "rabbitmq", "CONSUME", "CONSUME events.1 no-ack");
  // Every push arrives before the first credit: an acknowledgement before another entry's COMMIT.
  std::vector<int64_t> pushes;
  for (const auto& entry : e) pushes.push_back(b.brokerStep("c1", "rabbitmq", "DELIVER", {entry}, {entry}));
  credit(b, "c1");
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
  b.step("c1", "pg", "COMMIT", "COMMIT", "killed-before");
  const int64_t kill = b.kill("c1", "before:COMMIT#2");
  b.spawn("c2");
  b.finalOp(balances(100));
  const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
  CHECK(v.events == std::vector<int>{2, 3});
  REQUIRE(v.pattern);
  CHECK(v.pattern->id == "ack-before-effect");
  CHECK(v.pattern->explanation ==
        "c1 was handed entry 1-1 (event 2) by DELIVER#2, a delivery the broker counts as its acknowledgement; then c1 "
        "was killed at before:COMMIT#2 before the event's effect was durable, and the broker never handed it again: "
        "event 2 lost");
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(pushes[1]));
  CHECK_THAT(v.pattern->ops, Catch::Matchers::VectorContains(kill));
  CHECK_THAT(v.pattern->fix, Catch::Matchers::StartsWith("consume with manual acknowledgements"));
}

TEST_CASE("settled unseen: pushes on their way at a kill are lost, not stuck and never 'never delivered'", "[patterns]") {
  Scenario s = builtin("wallet");
  // c1 .. c`kills` each killed right after its subscription, then one that lives.
  auto history = [&](bool unseen, int kills = 1) {
    std::vector<std::string> points;
    for (int i = 1; i <= kills; ++i) points.push_back(fmt::format("after:CONSUME#{}", i));
    HistoryBuilder b(s, points);
    b.initial(balances(0));
    auto e = sendWallet(b, kAmounts, {1, 2});
    for (int i = 1; i <= kills; ++i) {
      const std::string c = fmt::format("c{}", i);
      b.spawn(c);
      b.step(c, "rabbitmq", "CONSUME", "CONSUME events.1 no-ack", "killed-after");
      b.kill(c, points[static_cast<size_t>(i - 1)]);
    }
    const std::string live = fmt::format("c{}", kills + 1);
    b.spawn(live);
    b.step(live, "rabbitmq", "CONSUME", "CONSUME events.1 no-ack");
    // The broker's queue is empty at the end (settled_unseen), or still holds both (undelivered).
    b.finalOp(balances(0), json::array(), unseen ? json::array() : json(e));
    auto ops = b.ops();
    if (unseen) finalOf(ops).settledUnseen = e;
    return ops;
  };
  SECTION("gone from the broker: lost, the anti-pattern named") {
    auto rs = checkAll(s, history(true));
    REQUIRE(merge(rs) == Verdict::Fail);
    CHECK(result(rs, "broker").verdict == Verdict::Pass); // nothing pending, nothing undelivered
    const auto& vs = result(rs, "invariant:balance").violations;
    REQUIRE(vs.size() == 1);
    CHECK(vs[0].kind == "lost");
    CHECK_THAT(vs[0].message, Contains("event 1 settled by a delivery no process read (c1 killed at after:CONSUME#1)"));
    CHECK_THAT(vs[0].message, !Contains("never delivered"));
    CHECK(vs[0].kill_point == "after:CONSUME#1"); // the one kill: it cut the connection they were on their way over
    REQUIRE(vs[0].pattern);
    CHECK(vs[0].pattern->id == "ack-before-effect");
    CHECK(vs[0].pattern->explanation ==
          "the broker settled entry 1-0 (event 1) as it sent it, by a subscription that acknowledges on delivery; c1 "
          "was killed at after:CONSUME#1 while those deliveries were on their way, and no process was handed it "
          "again: event 1 lost");
  }
  SECTION("two kills: which one cut the pushes is not known, and neither is named as the kill point") {
    auto rs = checkAll(s, history(true, 2));
    const auto& vs = result(rs, "invariant:balance").violations;
    REQUIRE(vs.size() == 1);
    CHECK(vs[0].kind == "lost");
    CHECK_THAT(vs[0].message, Contains("event 1 settled by a delivery no process read;"));
    CHECK(vs[0].kill_point.empty());
    REQUIRE(vs[0].pattern);
    CHECK_THAT(vs[0].pattern->explanation,
               Contains("processes were killed (c1 at after:CONSUME#1 and c2 at after:CONSUME#2) while those "
                        "deliveries were on their way"));
  }
  SECTION("still in the broker: stuck, never delivered, no anti-pattern") {
    auto rs = checkAll(s, history(false));
    REQUIRE(merge(rs) == Verdict::Fail);
    const auto& vs = result(rs, "invariant:balance").violations;
    REQUIRE(vs.size() == 1);
    CHECK(vs[0].kind == "stuck");
    CHECK_THAT(vs[0].message, Contains("never delivered"));
    CHECK(!vs[0].pattern);
  }
}

TEST_CASE("ack-before-effect: a push that settles itself, killed before it reached the process or before any COMMIT",
          "[patterns]") {
  // Killed at before:DELIVER#1: the broker sent and settled the message, the process never read it. Killed
  // at after:DELIVER#1, before any COMMIT: no acknowledgement of the consumer's to move after a COMMIT.
  for (const std::string point : {"before:DELIVER#1", "after:DELIVER#1"}) {
    Scenario s = builtin("wallet");
    HistoryBuilder b(s, {point});
    b.initial(balances(0));
    auto e = sendWallet(b, kAmounts, {1});
    b.spawn("c1");
    b.step("c1", "rabbitmq", "CONSUME", "CONSUME events.1 no-ack");
    b.brokerStep("c1", "rabbitmq", "DELIVER", {e[0]}, {e[0]}, point == "before:DELIVER#1" ? "killed-before" : "killed-after");
    b.kill("c1", point);
    b.spawn("c2");
    b.finalOp(balances(0));
    INFO(point);
    const Violation& v = ofKind(failing(s, b.ops(), "invariant:balance"), "lost");
    REQUIRE(v.pattern);
    CHECK(v.pattern->id == "ack-before-effect");
    CHECK_THAT(v.pattern->explanation, Contains("by DELIVER#1, a delivery the broker counts as its acknowledgement"));
    CHECK_THAT(v.pattern->fix, Catch::Matchers::StartsWith("consume with manual acknowledgements"));
  }
}
