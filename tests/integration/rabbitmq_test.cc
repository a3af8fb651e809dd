/// RabbitMQ consumers (harness/brokers/rabbitmq): the reference targets on librabbitmq and the test consumers
/// on pika, each behind the AMQP proxy, on the embedded node idemproof starts once per command, judged by the
/// same checkers as on Valkey and Kafka. Each idemproof command starts its node (5–13 s): the cases run few
/// commands, one schedule each, chosen to show a verdict.
#include "support.h"

#include <catch2/catch.hpp>

#include <set>

using namespace itest;

TEST_CASE("rabbitmq: the reference targets' verdicts at a kill next to their COMMIT and their ACK") {
  // The three at once, each with its own node: a node's start mostly waits on its Erlang boot.
  auto rs = cleanAll({{"run", "--target", target("amqp-dedup-table"), "--crash", "after:COMMIT#3"},
                      {"run", "--target", target("amqp-no-dedup"), "--crash", "after:COMMIT#3"},
                      {"run", "--target", target("amqp-ack-first"), "--crash", "after:ACK#3"}});
  {
    INFO("dedup-table passes a kill after its COMMIT");
    const Result& r = rs[0];
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.report["verdict"] == "pass");
    // Deliveries are steps of their own (the broker pushes them), acks steps the broker never answers.
    const auto& history = r.report["runs"][0]["history"];
    std::set<std::string> verbs;
    for (const auto& op : history)
      if (op["type"] == "step" && op["value"]["server"] == "rabbitmq") verbs.insert(op["value"]["verb"].get<std::string>());
    for (const char* v : {"QOS", "CONSUME", "DELIVER", "ACK"}) {
      INFO(v);
      CHECK(verbs.count(v) == 1);
    }
    CHECK(history[0]["value"]["stream"] == "events.1");
  }
  {
    INFO("no-dedup, killed between its COMMIT and its ACK, applies events 2 and 3 twice");
    const Result& r = rs[1];
    INFO(r.out << r.err);
    REQUIRE(r.status == 1);
    auto dup = onlyViolation(r, "duplicate");
    CHECK(dup["events"] == nlohmann::json::array({2, 3})); // 2: the producer's retry; 3: the kill
    CHECK(dup["kill_point"] == "after:COMMIT#3");
    CHECK(dup["message"].get<std::string>().find("redelivered to c2 (DELIVER#") != std::string::npos);
  }
  {
    INFO("ack-first, killed between its ACK and its COMMIT, loses event 3");
    const Result& r = rs[2];
    INFO(r.out << r.err);
    REQUIRE(r.status == 1);
    auto lost = onlyViolation(r, "lost");
    CHECK(lost["events"] == nlohmann::json::array({3}));
    CHECK(lost["pattern"]["id"] == "ack-before-effect");
  }
}

TEST_CASE("rabbitmq: Python consumers on pika are judged as their code is") {
  auto rs = cleanAll({{"run", "--target", testTarget("py-amqp-dedup-table"), "--crash", "after:COMMIT#3"},
                      {"run", "--target", testTarget("py-amqp-ack-first"), "--crash", "after:ACK#3"}});
  const Result& good = rs[0];
  const Result& bad = rs[1];
  INFO(good.out << good.err);
  CHECK(good.report["verdict"] == "pass");
  INFO(bad.out << bad.err);
  CHECK(bad.report["verdict"] == "fail");
  CHECK(!violations(bad.report, "lost").empty());
}

// [slow]: two more node starts, past what the default suite's budget leaves the RabbitMQ cases.
TEST_CASE("rabbitmq: Node consumers on amqplib are judged as their code is", "[slow]") {
  Result good = clean({"run", "--target", testTarget("node-amqp-dedup-table"), "--crash", "after:COMMIT#3"});
  INFO(good.out << good.err);
  CHECK(good.report["verdict"] == "pass");
  Result bad = clean({"run", "--target", testTarget("node-amqp-ack-first"), "--crash", "after:ACK#3"});
  INFO(bad.out << bad.err);
  CHECK(bad.report["verdict"] == "fail");
  CHECK(!violations(bad.report, "lost").empty());
}
