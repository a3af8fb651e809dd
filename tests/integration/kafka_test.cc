/// Kafka consumers (harness/brokers/kafka): the reference targets on librdkafka and the test consumers on
/// python3-confluent-kafka and kafkajs, each behind the Kafka proxy on an embedded broker of its workspace,
/// judged by the same checkers as on Valkey. A Kafka schedule costs seconds of the mock broker's own group
/// waits (3 s for a group's first member, 5 s after a member leaves: harness/brokers/kafka/README.md), so
/// each command runs one schedule chosen to show a verdict, and a case runs its commands at once.
#include "support.h"

#include <catch2/catch.hpp>

#include <set>

using namespace itest;

TEST_CASE("kafka: a forget after the last offset commit is a stall the restart ends, and dedup-table passes") {
  // The group's offsets go back to 0 once the consumer has committed everything: it fetches on from its own
  // position and never commits again. Its heartbeats are no work, so the stall is seen and the restart,
  // which reads from the committed offsets, gets every record again: dedup-table applies none twice.
  Result r = clean({"run", "--target", target("kafka-dedup-table"), "--crash", "forget:after:COMMIT_OFFSET#6"});
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK(r.report["verdict"] == "pass");
  const auto& final = r.report["runs"][0]["history"].back()["value"];
  CHECK(final["end"] == "settled");
}

TEST_CASE("kafka: reference targets under kills, a forget, a restart and a revoked commit, judged") {
  // Five commands at once, each with its own embedded broker: a Kafka run mostly waits on the group's joins.
  auto rs = cleanAll({{"run", "--target", target("kafka-dedup-table"), "--crash", "after:COMMIT#3"},
                      {"run", "--target", target("kafka-commit-after"), "--crash", "after:COMMIT#3"},
                      {"run", "--target", target("kafka-dedup-table"), "--crash", "forget:after:COMMIT_OFFSET#3",
                       "--crash", "after:COMMIT#5"},
                      {"run", "--target", target("kafka-dedup-table"), "--crash", "restart:after:COMMIT_OFFSET#2:kafka"},
                      {"run", "--target", target("kafka-commit-after"), "--crash",
                       "error:before:COMMIT_OFFSET#2:UNKNOWN_MEMBER_ID"}});
  {
    INFO("a processed-events row in the effect's transaction passes a kill after its COMMIT");
    const Result& r = rs[0];
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.report["verdict"] == "pass");
    // The run read the topic the harness made, in the group it named, through the proxy: the steps are Kafka's.
    const auto& history = r.report["runs"][0]["history"];
    const auto verbs = verbsOn(r, "kafka");
    for (const char* v : {"JOIN_GROUP", "SYNC_GROUP", "FETCH", "COMMIT_OFFSET"}) {
      INFO(v);
      CHECK(verbs.count(v) == 1);
    }
    CHECK(history[0]["value"]["stream"] == "events.1");
  }
  {
    INFO("commit-after, killed between its COMMIT and its offset commit, applies events 2 and 3 twice");
    const Result& r = rs[1];
    INFO(r.out << r.err);
    REQUIRE(r.status == 1);
    auto dup = onlyViolation(r, "duplicate");
    CHECK(dup["events"] == nlohmann::json::array({2, 3})); // 2: the producer's retry; 3: the kill
    CHECK(dup["kill_point"] == "after:COMMIT#3");
    CHECK(dup["message"].get<std::string>().find("redelivered to c2 (FETCH#") != std::string::npos);
    CHECK(dup["pattern"]["id"] == "effect-without-dedup");
  }
  {
    INFO("the broker forgets the group's offsets, and dedup-table still applies each event once");
    const Result& r = rs[2];
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.report["verdict"] == "pass");
  }
  {
    INFO("the broker restarts under dedup-table, which reconnects and applies each event once");
    const Result& r = rs[3];
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.report["verdict"] == "pass");
    bool reconnected = false;
    for (const auto& op : r.report["runs"][0]["history"])
      if (op["type"] == "note")
        reconnected = reconnected || op["value"]["message"] ==
                                         "after the Kafka restart (restart:after:COMMIT_OFFSET#2:kafka): c1 reconnected";
    CHECK(reconnected);
  }
  {
    // The member rejoins and reads its partition again from the last offset the group took: what it
    // applied since is applied again (dedup-table skips it: its kill run above shows the same redelivery).
    INFO("an offset commit answered UNKNOWN_MEMBER_ID, as a revoked member's is, is redelivered work");
    const Result& bad = rs[4];
    INFO(bad.out << bad.err);
    REQUIRE(bad.status == 1);
    auto dup = onlyViolation(bad, "duplicate");
    CHECK(dup["message"].get<std::string>().find("c1 got an error answer at error:before:COMMIT_OFFSET#2") !=
          std::string::npos);
    // The step is recorded as the broker's answer, with the code.
    bool answered = false;
    for (const auto& op : bad.report["runs"][0]["history"])
      if (op["type"] == "step" && op["value"]["verb"] == "COMMIT_OFFSET" && op["value"]["k"] == 2)
        answered = op["value"]["outcome"] == "answered" &&
                   op["value"]["summary"].get<std::string>().rfind("UNKNOWN_MEMBER_ID", 0) == 0;
    CHECK(answered);
  }
}

TEST_CASE("kafka: auto-commit passes a record before its effect commits, and a kill then loses event 3") {
  // The auto-commit runs every 100 ms in the background; a 300 ms delay inside event 3's transaction lets
  // it commit the offset past event 3 before the kill at its COMMIT (a case of its own: no other command
  // of the case competes with that background thread for the cores).
  Result r = clean({"run", "--target", target("kafka-autocommit"), "--crash", "delay:before:UPDATE#3:300", "--crash",
                    "before:COMMIT#3"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  auto lost = onlyViolation(r, "lost");
  CHECK(lost["events"] == nlohmann::json::array({3}));
  CHECK(lost["pattern"]["id"] == "ack-before-effect");
}

TEST_CASE("kafka: rebalance mid-batch: revoke-unsafe applies event 3 twice, dedup-table passes") {
  // At c1's check of its third record the group drops c1 (its requests to the broker wait with the step)
  // and c2 joins: c2 reads the partition from the last committed offset and applies event 3, then c1,
  // whose check had found no row, credits it too.
  // Both at once: a rebalance's run mostly waits on the group's joins. The pass: two events and a retry.
  // c2's join, read and idle end c1's hold; on a loaded machine they may take longer than the 10 s a hold
  // lasts by default, which releases it by time (the same verdict, another note).
  auto rs = cleanAll({{"run", "--target", target("kafka-revoke-unsafe"), "--crash", "rebalance:after:SELECT#3",
                       "--stall-timeout", "40s"},
                      {"run", "--target", target("kafka-dedup-table"), "--events", "2", "--crash",
                       "rebalance:before:COMMIT#2"}});
  const Result& bad = rs[0];
  const Result& good = rs[1];
  INFO(bad.out << bad.err);
  REQUIRE(bad.status == 1);
  auto dup = onlyViolation(bad, "duplicate");
  CHECK(dup["events"] == nlohmann::json::array({3}));
  const std::string told = dup["message"].get<std::string>();
  CHECK(told.find("a consumer joined the group at rebalance:after:SELECT#3 while c1 waited") != std::string::npos);
  CHECK(told.find("c1 and c2 both worked on event 3 at once") != std::string::npos);
  CHECK(dup["pattern"]["id"] == "revoked-member-works");
  bool joined = false, silent = false, released = false;
  for (const auto& op : bad.report["runs"][0]["history"]) {
    const auto& v = op["value"];
    if (op["type"] == "spawn" && op["process"] == "c2") joined = v.value("restart", "") == "rebalance";
    if (op["type"] != "note" || op["process"] != "c1") continue;
    const std::string note = v.value("message", "");
    silent = silent || note.find("held before the broker sees it: the process is out of its group") != std::string::npos;
    released = released || note.find("released: c2 joined the group, read and is idle") != std::string::npos;
  }
  CHECK(joined);
  CHECK(silent); // its heartbeats and fetches wait with its step
  CHECK(released);

  INFO(good.out << good.err);
  CHECK(good.status == 0);
  CHECK(good.report["verdict"] == "pass");
}

TEST_CASE("kafka: a transactional consumer's offsets are acknowledged when its transaction commits") {
  // confluent-kafka's send_offsets_to_transaction, then commit_transaction, after each record's database
  // transaction. The embedded broker (librdkafka's mock) answers a transaction's offsets without storing
  // them: the proxy stores them when the EndTxn that commits it is answered, or a correct consumer would be
  // judged stuck. Killed before its third EndTxn the record comes again; only the twin without dedup
  // applies it (and the producer's retry) twice.
  auto rs = cleanAll({{"run", "--target", testTarget("py-kafka-txn")},
                      {"run", "--target", testTarget("py-kafka-txn"), "--crash", "before:END_TXN#3"},
                      {"run", "--target", testTarget("py-kafka-txn-no-dedup"), "--crash", "after:COMMIT#3"}});
  for (int i = 0; i < 2; ++i) {
    INFO(rs[i].out << rs[i].err);
    CHECK(rs[i].status == 0);
    CHECK(rs[i].report["verdict"] == "pass");
  }
  int sent = 0, committed = 0;
  for (const auto& op : rs[0].report["runs"][0]["history"]) {
    if (op["type"] != "step") continue;
    const auto& v = op["value"];
    const bool acks = !v.value("acked", nlohmann::json::array()).empty();
    if (v["verb"] == "TXN_OFFSET_COMMIT") {
      ++sent;
      CHECK_FALSE(acks); // sent, not yet committed
    }
    if (v["verb"] == "END_TXN" && acks) ++committed;
  }
  CHECK(sent >= 5);
  CHECK(committed >= 5);
  INFO(rs[2].out << rs[2].err);
  CHECK(rs[2].status == 1);
  auto dups = violations(rs[2].report, "duplicate");
  REQUIRE(!dups.empty());
  CHECK(dups[0]["events"] == nlohmann::json::array({2, 3}));
}

TEST_CASE("kafka: a rebalance fault on a Valkey target is a usage error naming the fault, exit 2") {
  Result r = clean({"run", "--target", target("dedup-table"), "--crash", "rebalance:before:COMMIT#2"});
  CHECK(r.status == 2);
  CHECK(r.err == "idemproof: --crash rebalance:before:COMMIT#2: a rebalance fault needs a broker that has "
                 "'rebalance' (kafka has); target 'dedup-table' runs on valkey\n");
  Result s = clean({"sweep", "--target", target("dedup-table"), "--faults", "rebalance"});
  CHECK(s.status == 2);
  CHECK(s.err.find("--faults: a rebalance fault needs a broker that has 'rebalance'") != std::string::npos);
}

TEST_CASE("kafka: Python (confluent-kafka) and Node (kafkajs) consumers are judged as their code is") {
  // Killed after their third COMMIT, four at once (a Kafka run mostly waits on the group): the correct ones
  // pass, the buggy ones apply an event twice. And kafkajs as two members of one group: a follower whose
  // SyncGroup comes after the leader's is told to rejoin, never refused (kafkajs crashed on the refusal); and
  // a forget right after the first JoinGroup. kafkajs asks its default max wait of 5 s per Fetch, which the
  // embedded broker would wait out though records arrive: its proxy asks 500 ms.
  auto rs = cleanAll({{"run", "--target", testTarget("py-kafka-dedup-table"), "--crash", "after:COMMIT#3"},
                      {"run", "--target", testTarget("py-kafka-commit-first"), "--crash", "after:COMMIT#3"},
                      {"run", "--target", testTarget("node-kafka-dedup-table"), "--crash", "after:COMMIT#3"},
                      {"run", "--target", testTarget("node-kafka-autocommit"), "--crash", "after:COMMIT#3"},
                      {"run", "--target", testTarget("node-kafka-dedup-table"), "--consumers", "2"},
                      // The group takes no commit while it syncs: the forget is made once it is up.
                      {"run", "--target", testTarget("py-kafka-dedup-table"), "--crash", "forget:after:JOIN_GROUP#1"}});
  for (int i = 0; i < 2; ++i) {
    INFO(rs.back().out << rs.back().err);
    CHECK(rs.back().report["verdict"] == "pass");
    rs.pop_back();
  }
  CHECK(rs[2].report.dump().find("max wait 500 ms (asked 5000)") != std::string::npos);
  for (size_t i = 0; i < rs.size(); ++i) {
    INFO(rs[i].out << rs[i].err);
    if (i % 2 == 0) {
      CHECK(rs[i].report["verdict"] == "pass");
    } else {
      CHECK(rs[i].report["verdict"] == "fail");
      CHECK(!violations(rs[i].report, "duplicate").empty());
    }
  }
}

TEST_CASE("kafka: confluent-kafka's auto-commit at its defaults loses a record whose work outlasts a commit on "
          "the timer, dedup table or not") {
  // compare's class "slow work past an acknowledgement" runs this pair of faults (its planning is unit-tested
  // on this consumer's recorded history): event 3's statement delayed past the 5 s commit interval, the
  // consumer killed after the commit its timer made meanwhile, which covers the record still in work.
  auto rs = cleanAll({{"run", "--target", testTarget("py-kafka-autocommit-dedup")},
                      {"run", "--target", testTarget("py-kafka-autocommit-dedup"), "--crash", "delay:c1:before:INSERT#3:6000",
                       "--crash", "c1:after:COMMIT_OFFSET#1"}});
  INFO(rs[0].out << rs[0].err);
  CHECK(rs[0].report["verdict"] == "pass");
  INFO(rs[1].out << rs[1].err);
  CHECK(rs[1].report["verdict"] == "fail");
  const auto lost = violations(rs[1].report, "lost");
  REQUIRE(!lost.empty());
  CHECK(lost[0]["message"].get<std::string>().find("event 3 lost") != std::string::npos);
}

TEST_CASE("kafka: a kill sweep of dedup-table passes at every step", "[slow]") {
  Result r = clean({"sweep", "--target", target("kafka-dedup-table"), "--faults", "kill", "--workers", "2"});
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK(r.report["verdict"] == "pass");
}
