/// RabbitMQ consumers (harness/brokers/rabbitmq): the reference targets on librabbitmq and the test consumers
/// on pika and amqplib, each behind the AMQP proxy, judged by the same checkers as on Valkey and Kafka. A
/// node takes 5–13 s to start: one command starts its embedded node, the others use a node each case
/// starts once (with the embedded node's own code) and hand it to idemproof as the user's broker,
/// --amqp-url. The cases run one schedule per target, chosen to show a verdict.
#include "support.h"

#include "brokers/rabbitmq/client/admin.h"
#include "brokers/rabbitmq/client/embedded.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <future>
#include <set>

using namespace itest;

namespace {

using idem::rabbitmq::client::EmbeddedRabbit;

/// The node of this test process, started on the first call; it stops when the process exits.
std::shared_ptr<EmbeddedRabbit> node() {
  static auto n = EmbeddedRabbit::shared();
  return n;
}

/// The node's URL as a user writes it: the default vhost "/", spelt %2F.
std::string nodeUrl() { return fmt::format("amqp://{}:{}@127.0.0.1:{}/%2F", node()->user(), node()->password(), node()->port()); }

/// Whether queue `name` exists on the node's default vhost (a passive declare fails when not).
bool queueExists(const std::string& name) {
  try {
    idem::rabbitmq::client::AmqpAdmin("127.0.0.1", node()->port(), node()->user(), node()->password(), "/").counts(name);
    return true;
  } catch (const std::runtime_error&) {
    return false;
  }
}

} // namespace

TEST_CASE("rabbitmq: the reference targets' verdicts at a kill next to their COMMIT and their ACK") {
  // dedup-table on the node its command starts, meanwhile the others on the case's node (--amqp-url).
  auto embedded = std::async(std::launch::async, [] {
    return idemproof({"run", "--target", target("amqp-dedup-table"), "--crash", "after:COMMIT#3"});
  });
  const std::string url = nodeUrl();
  auto rs = cleanAll({{"run", "--target", target("amqp-no-dedup"), "--crash", "after:COMMIT#3", "--amqp-url", url},
                      // Killed inside event 3's transaction, its BEGIN held 300 ms first so that the broker
                      // has taken the ACK sent before it (see the pika and amqplib case below).
                      {"run", "--target", target("amqp-ack-first"), "--crash", "after:BEGIN#3", "--crash",
                       "delay:before:BEGIN#3:300", "--amqp-url", url}});
  rs.insert(rs.begin(), embedded.get());
  checkLeftNothing(rs[0]);
  {
    INFO("dedup-table passes a kill after its COMMIT");
    const Result& r = rs[0];
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.report["verdict"] == "pass");
    // Deliveries are steps of their own (the broker pushes them), acks steps the broker never answers.
    const auto& history = r.report["runs"][0]["history"];
    const auto verbs = verbsOn(r, "rabbitmq");
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
    // On the user's broker the run's queue is named after its workspace, and gone once idemproof is.
    const std::string queue = r.report["runs"][0]["history"][0]["value"]["stream"];
    CHECK(queue.rfind("idemproof.", 0) == 0);
    CHECK(!queueExists(queue));
  }
  {
    INFO("ack-first, killed between its ACK and its COMMIT (after its BEGIN), loses event 3");
    const Result& r = rs[2];
    INFO(r.out << r.err);
    REQUIRE(r.status == 1);
    auto lost = onlyViolation(r, "lost");
    CHECK(lost["events"] == nlohmann::json::array({3}));
    CHECK(lost["pattern"]["id"] == "ack-before-effect");
  }
}

TEST_CASE("rabbitmq: pika and amqplib consumers, manual acks and auto-ack, judged as their code is") {
  const std::string url = nodeUrl();
  auto rs = cleanAll({{"run", "--target", testTarget("py-amqp-dedup-table"), "--crash", "after:COMMIT#3", "--amqp-url", url},
                      // Ack-first acks, then credits on its own connection to PostgreSQL: killed inside event
                      // 3's transaction, after its BEGIN. The BEGIN waits 300 ms first, so that the broker has
                      // taken the ACK sent before it: a kill right at the ACK races the broker, which may drop
                      // an ack that comes just before its connection's end and deliver the message again.
                      {"run", "--target", testTarget("py-amqp-ack-first"), "--crash", "after:BEGIN#3", "--crash",
                       "delay:before:BEGIN#3:300", "--amqp-url", url},
                      {"run", "--target", testTarget("node-amqp-dedup-table"), "--crash", "after:COMMIT#3", "--amqp-url", url},
                      {"run", "--target", testTarget("node-amqp-ack-first"), "--crash", "after:BEGIN#3", "--crash",
                       "delay:before:BEGIN#3:300", "--amqp-url", url},
                      // auto_ack: each delivery settles its message; a kill before a COMMIT loses what was pushed.
                      {"run", "--target", testTarget("py-amqp-auto-ack"), "--crash", "before:COMMIT#2", "--amqp-url", url},
                      // Killed as its subscription is answered: the pushes that follow are settled on their way,
                      // read by the proxy or not. Gone from the queue either way: lost, never "never delivered".
                      {"run", "--target", testTarget("py-amqp-auto-ack"), "--crash", "after:CONSUME#1", "--amqp-url", url}});
  for (int i : {0, 2}) {
    INFO(rs[i].out << rs[i].err);
    CHECK(rs[i].report["verdict"] == "pass");
  }
  for (int i : {1, 3, 4}) {
    INFO(rs[i].out << rs[i].err);
    CHECK(rs[i].report["verdict"] == "fail");
    CHECK(!violations(rs[i].report, "lost").empty());
  }
  {
    // Settled at delivery, it holds nothing: the events the kill lost are delivered ones (DELIVER … no-ack),
    // never "not delivered", and the run ends without waiting for acknowledgements that never come.
    INFO(rs[4].out << rs[4].err);
    CHECK(verbsOn(rs[4], "rabbitmq").count("ACK") == 0);
    CHECK(violations(rs[4].report, "stuck").empty());
    CHECK(onlyViolation(rs[4], "lost")["message"].get<std::string>().find("(DELIVER#") != std::string::npos);
    CHECK(onlyViolation(rs[4], "lost")["pattern"]["id"] == "ack-before-effect");
  }
  {
    INFO(rs[5].out << rs[5].err);
    CHECK(rs[5].report["verdict"] == "fail");
    CHECK(violations(rs[5].report, "stuck").empty());
    CHECK(onlyViolation(rs[5], "lost")["events"] == nlohmann::json::array({1, 2, 3, 4, 5}));
    CHECK(onlyViolation(rs[5], "lost")["pattern"]["id"] == "ack-before-effect");
    CHECK(onlyViolation(rs[5], "lost")["message"].get<std::string>().find("never delivered") == std::string::npos);
    // Gone from the queue, each settled: no work is left, so the run settles without a stall and a restart.
    for (const auto& op : rs[5].report["runs"][0]["history"]) {
      CHECK(op["type"] != "stall");
      if (op["type"] == "final") CHECK(op["value"].value("reason", "") == "");
    }
  }
}

TEST_CASE("rabbitmq: acknowledgements in a channel transaction take effect at its commit, and a rollback undoes them") {
  const std::string url = nodeUrl();
  auto rs = cleanAll({// An error fails the PostgreSQL transaction: tx.rollback undoes the ack, the consumer acks again.
                      {"run", "--target", testTarget("py-amqp-tx"), "--crash", "error:before:COMMIT#2", "--amqp-url", url},
                      // Acks never committed: every message is still the broker's. Never a pass.
                      {"run", "--target", testTarget("py-amqp-tx-nocommit"), "--deadline", "8s", "--amqp-url", url},
                      // A no-ack push killed before it reached the process: settled by the broker as it sent it.
                      {"run", "--target", testTarget("py-amqp-auto-ack"), "--crash", "before:DELIVER#1", "--amqp-url", url}});
  {
    INFO(rs[0].out << rs[0].err);
    CHECK(rs[0].report["verdict"] == "pass");
    CHECK(verbsOn(rs[0], "rabbitmq").count("TX_ROLLBACK") == 1);
  }
  {
    INFO(rs[1].out << rs[1].err);
    CHECK(rs[1].report["verdict"] != "pass");
    CHECK(rs[1].status != 0);
  }
  {
    INFO(rs[2].out << rs[2].err);
    CHECK(rs[2].report["verdict"] == "fail");
    CHECK(violations(rs[2].report, "stuck").empty()); // lost, never "no delivery of it was recorded"
    CHECK(onlyViolation(rs[2], "lost")["events"] == nlohmann::json::array({1, 2, 3, 4, 5}));
  }
}

TEST_CASE("rabbitmq: --amqp-url that is no AMQP URL, or with a restart fault, is one line and exit 2") {
  for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--amqp-url", "http://127.0.0.1:5672/"}, "--amqp-url: scheme must be amqp://"},
           {{"--amqp-url", "amqp://127.0.0.1:5672/a/b"}, "--amqp-url: the path must be one vhost"},
           {{"--amqp-url", "amqp://127.0.0.1:5672/", "--crash", "restart:after:ACK#1:rabbitmq"},
            "--amqp-url: restart faults restart the servers"}}) {
    std::vector<std::string> cmd{"run", "--target", target("amqp-dedup-table")};
    cmd.insert(cmd.end(), args.begin(), args.end());
    Result r = clean(cmd);
    INFO(r.out << r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find(says) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}
