// The harness's Kafka client against real idemproof-kafka-server processes: EmbeddedKafka's start, commands
// and stop; KafkaAdmin's produce, progress and commit beside a librdkafka consumer of the group; and the
// LeaveGroup it sends for a member that was killed.
#include "brokers/kafka/client/admin.h"
#include "brokers/kafka/client/embedded.h"
#include "core/cleanup.h"
#include "core/error.h"

#include <boost/process.hpp>
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <librdkafka/rdkafka.h>

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

using idem::kafka::Membership;
using idem::kafka::client::EmbeddedKafka;
using idem::kafka::client::KafkaAdmin;
using Produced = idem::kafka::client::Record;

namespace client_test {

const std::string kProgram = std::string(IDEM_BINARY_DIR) + "/idemproof-kafka-server";

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

/// A consumer of `group` the way the reference targets make one (session.timeout.ms 6000).
rd_kafka_t* consumer(const std::string& bootstrap, const std::string& group) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (auto [k, v] : std::map<std::string, std::string>{{"bootstrap.servers", bootstrap},
                                                        {"group.id", group},
                                                        {"session.timeout.ms", "6000"},
                                                        {"heartbeat.interval.ms", "500"},
                                                        {"auto.offset.reset", "earliest"},
                                                        {"enable.auto.commit", "false"},
                                                        {"log_level", "3"}})
    REQUIRE(rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) == RD_KAFKA_CONF_OK);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  REQUIRE(rk);
  rd_kafka_poll_set_consumer(rk);
  return rk;
}

void subscribe(rd_kafka_t* rk, const std::string& topic) {
  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, topic.c_str(), RD_KAFKA_PARTITION_UA);
  REQUIRE(rd_kafka_subscribe(rk, topics) == RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_topic_partition_list_destroy(topics);
}

int assignedCount(rd_kafka_t* rk) {
  rd_kafka_topic_partition_list_t* assigned = nullptr;
  REQUIRE(rd_kafka_assignment(rk, &assigned) == RD_KAFKA_RESP_ERR_NO_ERROR);
  const int n = assigned->cnt;
  rd_kafka_topic_partition_list_destroy(assigned);
  return n;
}

/// Polls `rk` until `done()` or `limit` passed; whether done() held.
template <class F> bool pollUntil(rd_kafka_t* rk, std::chrono::milliseconds limit, F done, int* records = nullptr) {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    if (rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 20)) {
      if (!m->err && records) ++*records;
      rd_kafka_message_destroy(m);
    }
    if (done()) return true;
  }
  return done();
}

/// "TOPIC-P@O" -> {P, O}.
std::pair<int, int64_t> parseId(const std::string& id) {
  const auto dash = id.rfind('-'), at = id.rfind('@');
  return {std::stoi(id.substr(dash + 1, at - dash - 1)), std::stoll(id.substr(at + 1))};
}

/// `rk`'s membership of `group`: its member id, and its generation from librdkafka's serialised group
/// metadata ("CGMDv2:", then the generation as a host-order int32: librdkafka 2.0's layout, checked).
Membership membershipOf(rd_kafka_t* rk, const std::string& group) {
  rd_kafka_consumer_group_metadata_t* md = rd_kafka_consumer_group_metadata(rk);
  void* buf = nullptr;
  size_t size = 0;
  rd_kafka_error_t* e = rd_kafka_consumer_group_metadata_write(md, &buf, &size);
  rd_kafka_consumer_group_metadata_destroy(md);
  REQUIRE(!e);
  const std::string bytes(static_cast<const char*>(buf), size);
  rd_kafka_mem_free(rk, buf);
  REQUIRE(bytes.substr(0, 7) == "CGMDv2:");
  Membership m;
  m.group = group;
  std::memcpy(&m.generation, bytes.data() + 7, sizeof m.generation);
  char* id = rd_kafka_memberid(rk);
  m.member = id;
  rd_kafka_mem_free(rk, id);
  m.clientId = "idemproof-test";
  return m;
}

bool processGone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

} // namespace client_test

using namespace client_test;

TEST_CASE("kafka client: produce keyed records, progress and commit, a member's commits, stop") {
  pid_t pid = -1;
  {
    EmbeddedKafka kafka({kProgram});
    pid = kafka.pid();
    CHECK(kafka.bootstrap().rfind("127.0.0.1:", 0) == 0);
    CHECK(kafka.command("topic payments 3") == "ok");
    CHECK_THROWS_WITH(kafka.command("bogus"), Catch::Contains("unknown command"));
    KafkaAdmin admin(kafka.bootstrap());

    std::vector<Produced> recs;
    for (int i = 0; i < 6; ++i)
      recs.push_back(Produced{i % 2 ? "w2" : "w1", fmt::format(R"({{"amount":"{}"}})", i), {{"event_id", fmt::format("e{}", i)}}});
    auto start = Clock::now();
    const auto ids = admin.produce("payments", recs);
    const double produceMs = msSince(start);
    REQUIRE(ids.size() == 6);
    std::map<std::string, int> partitionOf;
    std::map<int, int64_t> lastOffset;
    for (size_t i = 0; i < ids.size(); ++i) {
      CHECK(ids[i].rfind("payments-", 0) == 0);
      const auto [p, offset] = parseId(ids[i]);
      if (!partitionOf.count(recs[i].key)) partitionOf[recs[i].key] = p;
      CHECK(partitionOf[recs[i].key] == p);
      if (lastOffset.count(p)) CHECK(offset > lastOffset[p]);
      lastOffset[p] = offset;
    }

    // A topic nobody created is an error, and stays uncreated (the mock creates a topic a Metadata request
    // names, with 4 partitions).
    CHECK_THROWS_WITH(admin.produce("missing", recs), Catch::Contains("Kafka topic missing: no such topic"));
    CHECK_THROWS_WITH(admin.progress("missing", "g", std::chrono::seconds(5)), Catch::Contains("no such topic"));
    auto progress = admin.progress("payments", "g", std::chrono::seconds(5));
    REQUIRE(progress.size() == 3);
    int64_t total = 0;
    for (size_t i = 0; i < progress.size(); ++i) {
      CHECK(progress[i].partition == static_cast<int>(i));
      CHECK(progress[i].committed == -1);
      total += progress[i].logEnd;
      if (lastOffset.count(progress[i].partition)) CHECK(progress[i].logEnd == lastOffset[progress[i].partition] + 1);
    }
    CHECK(total == 6);

    // What one call costs once the handles are made, as a run's settling asks it in a loop.
    std::vector<double> calls;
    for (int i = 0; i < 50; ++i) {
      start = Clock::now();
      admin.progress("payments", "g", std::chrono::seconds(5));
      calls.push_back(msSince(start));
    }
    std::sort(calls.begin(), calls.end());
    std::vector<Produced> ten(10, Produced{"w3", "{}", {}});
    start = Clock::now();
    admin.produce("payments", ten);
    const double tenMs = msSince(start);
    fmt::print(stderr, "produce 6 (first, connecting) {:.1f} ms, 10 more {:.1f} ms; progress() median {:.2f} ms, max {:.2f} ms\n",
               produceMs, tenMs, calls[calls.size() / 2], calls.back());

    const int p1 = partitionOf["w1"];
    admin.commit("payments", "g", {{p1, 1}});
    progress = admin.progress("payments", "g", std::chrono::seconds(5));
    for (const auto& p : progress) CHECK(p.committed == (p.partition == p1 ? 1 : -1));

    // A member of the group consumes from the committed offsets on and commits where it stopped.
    const auto before = admin.progress("payments", "g", std::chrono::seconds(5));
    int64_t expected = 0;
    for (const auto& p : before) expected += p.logEnd - std::max<int64_t>(p.committed, 0);
    rd_kafka_t* member = consumer(kafka.bootstrap(), "g");
    subscribe(member, "payments");
    int records = 0;
    CHECK(pollUntil(member, std::chrono::seconds(20), [&] { return records >= expected; }, &records));
    CHECK(records == expected);
    REQUIRE(rd_kafka_commit(member, nullptr, 0) == RD_KAFKA_RESP_ERR_NO_ERROR);
    progress = admin.progress("payments", "g", std::chrono::seconds(5));
    // A partition it read nothing from has no position to commit: -1 there means the log's start.
    for (const auto& p : progress) CHECK((p.committed == p.logEnd || (p.committed == -1 && p.logEnd == 0)));

    // A commit from outside the group: the mock took the one above, before any member joined; now that the
    // group exists it refuses it, with a live member or (below) with none. A commit in the live member's
    // name and generation is taken.
    CHECK_THROWS_WITH(admin.commit("payments", "g", {{p1, 0}}), Catch::Contains("Unknown member"));
    const Membership live = membershipOf(member, "g");
    KafkaAdmin::commitAs(kafka.bootstrap(), live, "payments", {{p1, 0}}, std::chrono::seconds(5));
    CHECK(admin.progress("payments", "g", std::chrono::seconds(5))[p1].committed == 0);
    Membership stale = live;
    --stale.generation;
    CHECK_THROWS_WITH(KafkaAdmin::commitAs(kafka.bootstrap(), stale, "payments", {{p1, 1}}, std::chrono::seconds(5)),
                      Catch::Contains(fmt::format("payments-{}: ILLEGAL_GENERATION", p1)));
    rd_kafka_consumer_close(member);
    rd_kafka_destroy(member);
    CHECK_THROWS_WITH(admin.commit("payments", "g", {{p1, 1}}), Catch::Contains("Unknown member"));
    CHECK_THROWS_WITH(KafkaAdmin::commitAs(kafka.bootstrap(), live, "payments", {{p1, 1}}, std::chrono::seconds(5)),
                      Catch::Contains("UNKNOWN_MEMBER_ID"));
    CHECK(admin.progress("payments", "g", std::chrono::seconds(5))[p1].committed == 0);
    CHECK(processGone(pid) == false);
  }
  CHECK(processGone(pid));
}

// Slow, outside the test command: it rides on the mock coordinator's rebalance of a live group with a
// member in another process, which left the second member without an assignment for 15 s in one run of
// the whole suite (alone on two cores) and in one under load. The harness's own use of LeaveGroup is run
// by the kill runs of tests/integration/kafka_test.cc; the frames by answers_test.cc.
TEST_CASE("kafka client: LeaveGroup for a killed member hands its partitions over at once", "[slow]") {
  namespace bp = boost::process;
  EmbeddedKafka kafka({kProgram});
  kafka.command("topic orders 3");
  bp::ipstream out;
  bp::child killed(KAFKA_TEST_MEMBER, kafka.bootstrap(), "orders", "g", bp::std_out > out);
  std::string member;
  int count = 0;
  REQUIRE(out >> member >> count); // printed once it has an assignment: the group's only member
  CHECK(count == 3);

  rd_kafka_t* second = consumer(kafka.bootstrap(), "g");
  subscribe(second, "orders");
  // It joins the live group: the killed-to-be member rejoins and the partitions are shared.
  REQUIRE(pollUntil(second, std::chrono::seconds(15), [&] { return assignedCount(second) > 0; }));
  CHECK(assignedCount(second) < 3);

  ::kill(killed.id(), SIGKILL);
  killed.wait();
  const auto killedAt = Clock::now();
  Membership m;
  m.group = "g";
  m.member = member;
  m.clientId = "killed-member";
  CHECK(KafkaAdmin::leaveGroup(kafka.bootstrap(), m, std::chrono::seconds(5)) == 0);
  REQUIRE(pollUntil(second, std::chrono::seconds(20), [&] { return assignedCount(second) == 3; }));
  const double handOver = msSince(killedAt);
  fmt::print(stderr, "every partition to the second member {:.0f} ms after the kill (session timeout 6000 ms)\n",
             handOver);
  // Kafka hands over as soon as the remaining members rejoined. The mock's coordinator waits the session
  // timeout less 1 s after any leave (5 s here) whoever rejoined; without the LeaveGroup it first waits out
  // the dead member's session, then those 5 s: 11 s measured (printed, not bounded: a loaded machine
  // stretches both). What the LeaveGroup did is shown by the group itself: the member is gone, a second
  // LeaveGroup is answered UNKNOWN_MEMBER_ID (25), a whole frame all the same.
  CHECK(KafkaAdmin::leaveGroup(kafka.bootstrap(), m, std::chrono::seconds(5)) == 25);
  rd_kafka_consumer_close(second);
  rd_kafka_destroy(second);
}

TEST_CASE("kafka client: a progress query the broker leaves unanswered past its wait is asked once more") {
  EmbeddedKafka kafka({kProgram});
  REQUIRE(kafka.command("topic t 2") == "ok");
  KafkaAdmin admin(kafka.bootstrap());
  admin.produce("t", {Produced{"k", "{}", {}}});
  REQUIRE(admin.progress("t", "g", std::chrono::seconds(5)).size() == 2); // connected, the partitions known
  // The mock holds its answers while it has a round trip time and sends them when it has none: held for
  // 4.5 s, the first query's wait of 3 s runs out, and the second, on new connections, is answered 1.5 s
  // into its own wait (1.5 s of slack either side on a loaded machine).
  REQUIRE(kafka.command("rtt 1 60000") == "ok");
  std::thread prompt([&kafka] {
    std::this_thread::sleep_for(std::chrono::milliseconds(4500));
    kafka.command("rtt 1 0");
  });
  const auto start = Clock::now();
  std::vector<idem::kafka::client::PartitionProgress> progress;
  CHECK_NOTHROW(progress = admin.progress("t", "g", std::chrono::seconds(3)));
  const double ms = msSince(start);
  prompt.join();
  CHECK(ms >= 3000); // it did wait out the first
  REQUIRE(progress.size() == 2);
  CHECK(progress[0].logEnd + progress[1].logEnd == 1);
  // Late past both waits (the second one's connections are not up in time): one error naming the query.
  REQUIRE(kafka.command("rtt 1 3000") == "ok");
  CHECK_THROWS_WITH(admin.progress("t", "g", std::chrono::milliseconds(300)),
                    Catch::StartsWith("Kafka group g on topic t: log end offsets: "));
}

TEST_CASE("kafka client: a program that exits at start or no listener is a clear error") {
  CHECK_THROWS_WITH(EmbeddedKafka({"/bin/false"}), Catch::Contains("/bin/false") && Catch::Contains("exited at start") &&
                                                       Catch::Contains("log: "));
  Membership m;
  m.group = "g";
  m.member = "m";
  // A port nothing listens on (the broker's, once it stopped).
  std::string stopped;
  {
    EmbeddedKafka kafka({kProgram});
    stopped = kafka.bootstrap();
  }
  CHECK_THROWS_WITH(KafkaAdmin::leaveGroup(stopped, m, std::chrono::seconds(2)), Catch::Contains("connect"));
}

TEST_CASE("kafka client: Cleanup stops the broker as a signal to idemproof would, SIGTERM first") {
  CHECK(EmbeddedKafka::findProgram() == std::filesystem::path(kProgram).lexically_normal());
  EmbeddedKafka kafka; // found beside the test executable's folder

  const pid_t pid = kafka.pid();
  CHECK(kafka.command("topic t 1") == "ok");
  idem::Cleanup::instance().runAll(); // what the signal thread runs on SIGINT, SIGTERM or SIGHUP
  CHECK(processGone(pid));
  CHECK_THROWS_WITH(kafka.command("topic u 1"), Catch::Contains("idemproof-kafka-server"));
}
