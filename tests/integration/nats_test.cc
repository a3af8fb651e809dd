/// NATS JetStream consumers (harness/brokers/nats): the reference targets on libnats, the Node test
/// consumers on nats.js and the Python ones on a socket client of their own, each behind the NATS proxy on
/// an embedded nats-server of its workspace, judged by the same checkers as on Valkey and Kafka. A NATS
/// schedule takes well under a second (the durable's AckWait is CLAIM_IDLE_MS, 20 ms), so each case runs
/// one schedule chosen to show a verdict.
#include "support.h"

#include "brokers/nats/client/embedded.h"

#include <catch2/catch.hpp>
#include <nats/nats.h>

#include <set>

using namespace itest;

TEST_CASE("nats: a processed-events row in the effect's transaction passes a kill after its COMMIT") {
  Result r = clean({"run", "--target", target("nats-dedup-table"), "--crash", "after:COMMIT#3"});
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK(r.report["verdict"] == "pass");
  // The run read the stream the harness made, on the durable it named, through the proxy: the steps are NATS's.
  const auto& history = r.report["runs"][0]["history"];
  CHECK(verbsOn(r, "nats") == std::set<std::string>{"FETCH", "ACK"});
  CHECK(history[0]["value"]["stream"] == "events_1");
  CHECK(history[0]["value"]["group"] == "consumers_1");
}

TEST_CASE("nats: no-dedup, killed between its COMMIT and its ACK, applies events 2 and 3 twice") {
  Result r = clean({"run", "--target", target("nats-no-dedup"), "--crash", "after:COMMIT#3"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  auto dup = onlyViolation(r, "duplicate");
  CHECK(dup["events"] == nlohmann::json::array({2, 3})); // 2: the producer's retry; 3: the kill
  CHECK(dup["kill_point"] == "after:COMMIT#3");
  CHECK(dup["message"].get<std::string>().find("redelivered to c2 (FETCH#") != std::string::npos);
  CHECK(dup["pattern"]["id"] == "effect-without-dedup");
}

TEST_CASE("nats: ack-first, killed between its ACK and its COMMIT, loses event 3") {
  Result r = clean({"run", "--target", target("nats-ack-first"), "--crash", "after:ACK#3"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  auto lost = onlyViolation(r, "lost");
  CHECK(lost["events"] == nlohmann::json::array({3}));
  CHECK(lost["pattern"]["id"] == "ack-before-effect");
}

TEST_CASE("nats: the durable forgets its acks and the server restarts, and dedup-table applies each event once") {
  Result forgot = clean({"run", "--target", target("nats-dedup-table"), "--crash", "forget:after:ACK#3", "--crash",
                         "after:COMMIT#5"});
  INFO(forgot.out << forgot.err);
  CHECK(forgot.status == 0);
  CHECK(forgot.report["verdict"] == "pass");
  Result restarted = clean({"run", "--target", target("nats-dedup-table"), "--crash", "restart:after:ACK#2:nats"});
  INFO(restarted.out << restarted.err);
  CHECK(restarted.status == 0);
  CHECK(restarted.report["verdict"] == "pass");
}

TEST_CASE("nats: Node consumers on nats.js are judged as their code is") {
  Result good = clean({"run", "--target", testTarget("node-nats-dedup-table"), "--crash", "after:COMMIT#3"});
  INFO(good.out << good.err);
  CHECK(good.report["verdict"] == "pass");
  Result bad = clean({"run", "--target", testTarget("node-nats-ack-first"), "--crash", "after:ACK#3"});
  INFO(bad.out << bad.err);
  CHECK(bad.report["verdict"] == "fail");
  CHECK(!violations(bad.report, "lost").empty());
}

TEST_CASE("nats: nats.js consume() at its defaults, pulls of 100 whose messages the server pushes, is judged") {
  // consume(): one pull of 100 brings all six messages at once, the later five as FETCH steps the server
  // pushes. An AckWait of 2 s keeps the messages waiting in the client's buffer from coming again before
  // their turn, also on a loaded machine (at 20 ms each would come several times, and at 500 ms, the six
  // worked through slowly, some did: a balance that many deliveries explain otherwise is unknown, never a
  // pass).
  auto rs = cleanAll({{"run", "--target", testTarget("node-nats-consume-dedup-table"), "--crash", "after:FETCH#4",
                       "--claim-idle-ms", "2000"},
                      {"run", "--target", testTarget("node-nats-consume-dedup-table"), "--crash", "after:COMMIT#3",
                       "--claim-idle-ms", "2000"},
                      {"run", "--target", testTarget("node-nats-consume-ack-first"), "--crash", "after:ACK#3",
                       "--claim-idle-ms", "2000"}});
  for (size_t i = 0; i < 2; ++i) {
    INFO(rs[i].out << rs[i].err);
    CHECK(rs[i].status == 0);
    CHECK(rs[i].report["verdict"] == "pass");
    const auto& steps = rs[i].report["runs"][0]["history"];
    // The batch's later messages came as FETCH steps the server pushed (after:FETCH#4 is one of them).
    bool pushed = false;
    for (const auto& op : steps)
      if (op["type"] == "step" && op["value"]["verb"] == "FETCH" &&
          op["value"]["detail"].get<std::string>().find("of a pull request for 100") != std::string::npos)
        pushed = true;
    CHECK(pushed);
  }
  INFO(rs[2].out << rs[2].err);
  REQUIRE(rs[2].status == 1);
  auto lost = violations(rs[2].report, "lost");
  REQUIRE(lost.size() == 1);
  CHECK(lost[0]["events"] == nlohmann::json::array({3}));
  CHECK(lost[0]["kill_point"] == "after:ACK#3");
}

TEST_CASE("nats: Python consumers on a socket client of their own are judged as their code is") {
  // py-nats-*: the text protocol by hand (SUB, PUB, HMSG), a pull of batch 1, +ACK as a request (AckSync).
  auto rs = cleanAll({{"run", "--target", testTarget("py-nats-dedup-table"), "--crash", "after:COMMIT#3"},
                      {"run", "--target", testTarget("py-nats-ack-first"), "--crash", "after:ACK#3"}});
  {
    INFO(rs[0].out << rs[0].err);
    CHECK(rs[0].report["verdict"] == "pass");
    CHECK(verbsOn(rs[0], "nats") == std::set<std::string>{"FETCH", "ACK"});
  }
  INFO(rs[1].out << rs[1].err);
  CHECK(rs[1].report["verdict"] == "fail");
  auto lost = violations(rs[1].report, "lost"); // and event 2, the producer's retry, applied twice
  REQUIRE(lost.size() == 1);
  CHECK(lost[0]["events"] == nlohmann::json::array({3}));
}

TEST_CASE("nats: an ACK the server refuses is delivered again, which no-dedup applies twice") {
  Result r = clean({"run", "--target", target("nats-no-dedup"), "--crash", "error:before:ACK#2"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  auto dup = onlyViolation(r, "duplicate");
  CHECK(dup["events"] == nlohmann::json::array({2}));
  CHECK(dup["message"].get<std::string>().find("c1 got an error answer at error:before:ACK#2") != std::string::npos);
  bool answered = false;
  for (const auto& op : r.report["runs"][0]["history"])
    if (op["type"] == "step" && op["value"]["verb"] == "ACK" && op["value"]["k"] == 2)
      answered = op["value"]["outcome"] == "answered" &&
                 op["value"]["summary"].get<std::string>().rfind("PERMISSIONS_VIOLATION", 0) == 0;
  CHECK(answered);
}

namespace {

/// The names of the streams on the server at `url` (libnats, the harness's client library).
std::vector<std::string> streamNames(const std::string& url) {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  std::vector<std::string> out;
  REQUIRE(natsConnection_ConnectTo(&nc, url.c_str()) == NATS_OK);
  REQUIRE(natsConnection_JetStream(&js, nc, nullptr) == NATS_OK);
  jsStreamNamesList* names = nullptr;
  natsStatus s = js_StreamNames(&names, js, nullptr, nullptr);
  if (s == NATS_OK)
    for (int i = 0; i < names->Count; ++i) out.emplace_back(names->List[i]);
  else REQUIRE(s == NATS_NOT_FOUND); // no stream at all
  if (names) jsStreamNamesList_Destroy(names);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  return out;
}

} // namespace

TEST_CASE("nats: --nats-url runs on the user's server, streams named apart and gone after the command") {
  // A server the case starts (as idemproof starts its own: a token every connection presents).
  idem::nats::client::EmbeddedNats server;
  const std::string url = server.url();
  auto rs = cleanAll({{"run", "--target", target("nats-dedup-table"), "--crash", "after:COMMIT#3", "--nats-url", url},
                      {"run", "--target", target("nats-no-dedup"), "--crash", "after:COMMIT#3", "--nats-url", url},
                      {"run", "--target", testTarget("node-nats-dedup-table"), "--crash", "after:COMMIT#3", "--nats-url", url}});
  for (int i : {0, 2}) {
    INFO(rs[i].out << rs[i].err);
    CHECK(rs[i].report["verdict"] == "pass");
    const std::string stream = rs[i].report["runs"][0]["history"][0]["value"]["stream"];
    CHECK(stream.rfind("idemproof_", 0) == 0);
  }
  INFO(rs[1].out << rs[1].err);
  CHECK(onlyViolation(rs[1], "duplicate")["events"] == nlohmann::json::array({2, 3}));
  CHECK(streamNames(url).empty());
  // A restart fault needs the embedded server: one line, exit 2.
  Result r = clean({"run", "--target", target("nats-dedup-table"), "--crash", "restart:after:ACK#1:nats", "--nats-url", url});
  CHECK(r.status == 2);
  CHECK(r.err.find("--nats-url: restart faults restart the servers") != std::string::npos);
}
