// The classes of `compare` (pure functions of a recorded trace and of the scenario) and the progress line.
#include "driver/commands.h"
#include "driver/compare.h"
#include "driver/progress.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include <unistd.h>

using namespace idem;
using namespace idem::compare;

namespace {

std::vector<Op> recorded(const std::string& name) {
  std::ifstream in(std::string(IDEM_SOURCE_DIR) + "/tests/golden/inputs/" + name);
  return nlohmann::json::parse(in).get<std::vector<Op>>();
}

Scenario wallet() { return loadScenario("wallet", std::string(IDEM_SOURCE_DIR) + "/scenarios"); }

size_t occurrences(const std::string& text, const std::string& word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + word.size())) ++n;
  return n;
}

} // namespace

TEST_CASE("compare: kill points are classed by the gap between two steps of one consumer") {
  // simple: every process reads, then BEGIN UPDATE COMMIT XACK per entry; empty reads are no steps.
  auto points = classifyKillPoints(recorded("simple-default.history.json"));
  std::map<std::string, std::string> classOf;
  std::vector<std::string> order;
  for (const auto& p : points) {
    classOf[p.fault.str()] = p.cls.label;
    if (std::find(order.begin(), order.end(), p.cls.label) == order.end()) order.push_back(p.cls.label);
  }
  CHECK(classOf["before:XREADGROUP#2"] == "at start, before XREADGROUP");
  CHECK(classOf["after:XREADGROUP#2"] == "after XREADGROUP, before BEGIN");
  CHECK(classOf["after:COMMIT#1"] == "after COMMIT, before XACK");
  CHECK(classOf["before:XACK#1"] == "after COMMIT, before XACK");
  CHECK(classOf["after:XACK#1"] == "after XACK, before BEGIN");
  CHECK(classOf.count("before:XREADGROUP#1") == 0); // a read that delivered nothing
  CHECK(order.front() == "at start, before XREADGROUP");
  for (const auto& p : points) {
    CHECK(p.cls.kind == "kill");
    CHECK(p.cls.id.rfind("kill:", 0) == 0);
  }
}

TEST_CASE("compare: with startOnce the kill points before a process's first delivery are one class") {
  // simple's c1: XREADGROUP#1 delivered nothing, XREADGROUP#2 its first entries.
  std::map<std::string, std::string> classOf;
  for (const auto& p : classifyKillPoints(recorded("simple-default.history.json"), true)) classOf[p.fault.str()] = p.cls.id;
  CHECK(classOf["before:XREADGROUP#2"] == "kill:start>delivery");
  CHECK(classOf["after:XREADGROUP#2"] == "kill:XREADGROUP>BEGIN"); // an entry in hand
  CHECK(classOf["after:COMMIT#1"] == "kill:COMMIT>XACK");
  for (const auto& [point, id] : classOf) CHECK((id.rfind("kill:start>", 0) != 0 || id == "kill:start>delivery"));
}

TEST_CASE("compare: a consumer that commits a batch's offsets at once is held in the races at its first event's steps") {
  // kafka-revoke-unsafe's c1 works on six records, then commits their offsets in one OffsetCommit: its
  // UPDATE#3 is the third record's, which a race's one-event schedule never reaches.
  const auto history = recorded("kafka-revoke-unsafe-rebalance.history.json");
  const Schedule base = generatedSchedule(wallet(), 6, 1);
  size_t held = 0;
  for (const auto& r : raceSchedules(wallet(), base, history, 0))
    for (const auto& f : r.schedule.faults)
      if (f.kind == "hold") {
        INFO(r.cls.id << " " << f.str());
        CHECK(f.k == 1);
        ++held;
      }
  CHECK(held > 0);
  // simple acknowledges each entry alone: its first entry's steps, as they were.
  std::set<std::string> simpleHolds;
  for (const auto& r : raceSchedules(wallet(), base, recorded("simple-default.history.json"), 0))
    for (const auto& f : r.schedule.faults)
      if (f.kind == "hold") simpleHolds.insert(f.verb + "#" + std::to_string(f.k));
  CHECK(simpleHolds == std::set<std::string>{"BEGIN#1", "UPDATE#1", "COMMIT#1", "XACK#1"});
}

TEST_CASE("compare: a race run in which no copy reached c2 while c1 was held did not race") {
  // A Java RabbitMQ consumer (prefetch 10) held before its UPDATE#1 for race:dup: the retry, sent in flight,
  // went to c1 too (it had room under its prefetch), c2 got nothing and the hold ran out. With prefetch 1
  // the broker handed the retry to c2 while c1 was held.
  Schedule s;
  s.faults = {Fault::parse("hold:c1:before:UPDATE#1:c2:after:ACK#1", "test")};
  CHECK(!raced("race:dup", s, recorded("amqp-prefetch-10-race-dup.history.json")));
  CHECK(raced("race:dup", s, recorded("amqp-prefetch-1-race-dup.history.json")));
  // Not a race schedule, or c1's hold never fired: no race.
  CHECK(!raced("race:dup", Schedule{}, recorded("amqp-prefetch-1-race-dup.history.json")));
  Schedule other = s;
  other.faults = {Fault::parse("hold:c1:before:UPDATE#9:c2:after:ACK#1", "test")};
  CHECK(raced("race:dup", other, recorded("amqp-prefetch-1-race-dup.history.json"))); // it fired there as #1
}

TEST_CASE("compare: slow work past an acknowledgement, for a consumer that acknowledges several entries at once") {
  // confluent-kafka at its defaults: auto-commit every 5 s of the offsets its polls stored. Its first
  // OffsetCommit settles the six records: a delay at each statement on the data before it, and a kill
  // after the next commit.
  const auto points = classifySlowWorkPoints(recorded("kafka-auto-commit-default.history.json"));
  REQUIRE(points.size() >= 6);
  for (const auto& p : points) {
    INFO(p.fault.str());
    CHECK(p.cls.id == "slow:ack");
    CHECK(p.fault.kind == "delay");
    CHECK(p.fault.process == "c1");
    CHECK(p.fault.args == std::vector<std::string>{std::to_string(kSlowWorkMs)});
    CHECK((p.fault.verb == "INSERT" || p.fault.verb == "UPDATE"));
    REQUIRE(p.also.size() == 1);
    CHECK(p.also[0].str() == "c1:after:COMMIT_OFFSET#1");
  }
  // simple acknowledges each entry after its own work: nothing new to find there.
  CHECK(classifySlowWorkPoints(recorded("simple-default.history.json")).empty());
}

TEST_CASE("compare: dedup-valkey's trace has the gap that loses a payment, after SET and before BEGIN") {
  std::set<std::string> ids;
  for (const auto& p : classifyKillPoints(recorded("dedup-valkey-after-SET3.history.json"))) ids.insert(p.cls.id);
  CHECK(ids.count("kill:SET>BEGIN") == 1);
  CHECK(ids.count("kill:COMMIT>XACK") == 1);
  CHECK(ids.count("kill:SET>XACK") == 1); // a duplicate: SET NX finds the mark, XACK
}

TEST_CASE("compare: sampling keeps the first and the last, spread evenly") {
  std::vector<ClassedPoint> ps(7);
  for (int i = 0; i < 7; ++i) ps[i].fault.k = i + 1;
  auto ks = [](const std::vector<ClassedPoint>& v) {
    std::vector<int> out;
    for (const auto& p : v) out.push_back(p.fault.k);
    return out;
  };
  CHECK(ks(sample(ps, 0)).size() == 7);
  CHECK(ks(sample(ps, 1)) == std::vector<int>{1});
  CHECK(ks(sample(ps, 2)) == std::vector<int>{1, 7});
  CHECK(ks(sample(ps, 3)) == std::vector<int>{1, 4, 7});
  CHECK(ks(sample(ps, 9)).size() == 7);
}

TEST_CASE("compare: class orders of several targets merge, each new class after its predecessor") {
  auto c = [](const std::string& id) { return Class{id, "kill", id, ""}; };
  std::vector<Class> order;
  mergeClassOrder(order, {c("a"), c("b"), c("d")});
  mergeClassOrder(order, {c("s"), c("a"), c("c"), c("d"), c("e")});
  std::vector<std::string> ids;
  for (const auto& x : order) ids.push_back(x.id);
  CHECK(ids == std::vector<std::string>{"s", "a", "c", "b", "d", "e"});
}

TEST_CASE("compare: generated classes are the same schedules with a retry, a late retry, a shuffled stream") {
  Scenario sc = wallet();
  auto gen = generatedClasses(sc, 3, 6, 42);
  REQUIRE(gen.size() == 3);
  CHECK(gen[0].cls.id == "retry");
  CHECK(gen[1].cls.id == "late-retry");
  CHECK(gen[2].cls.id == "reorder");
  for (int i = 0; i < 3; ++i) {
    const auto& base = gen[0].schedules[i];
    CHECK(base.stream.size() == 7);
    CHECK(base.retries() == 1);
    CHECK(gen[1].schedules[i].events.size() == base.events.size());
    CHECK(gen[1].schedules[i].stream.back().phase == 2);
    CHECK(gen[1].schedules[i].phases() == 2);
    std::vector<int> a, b;
    for (const auto& e : base.stream) a.push_back(e.event);
    for (const auto& e : gen[2].schedules[i].stream) b.push_back(e.event);
    CHECK(a != b);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    CHECK(a == b);
  }
  // The same seed gives the same schedules (every target runs the same ones).
  auto again = generatedClasses(sc, 3, 6, 42);
  CHECK(nlohmann::json(again[2].schedules[1]) == nlohmann::json(gen[2].schedules[1]));
}

TEST_CASE("compare: a scenario with poison events gets a poison class, its last event poison") {
  Scenario sc = loadScenario("wallet-poison", std::string(IDEM_SOURCE_DIR) + "/scenarios");
  auto gen = generatedClasses(sc, 2, 5, 42);
  REQUIRE(gen.size() == 4);
  CHECK(gen[3].cls.id == "poison");
  REQUIRE(gen[3].schedules.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    const auto& s = gen[3].schedules[i];
    CHECK(s.stream.size() == gen[0].schedules[i].stream.size());
    for (const auto& e : s.events) CHECK(sc.isPoison(e.fields) == (e.n == 5));
    for (const auto& e : gen[0].schedules[i].events) CHECK_FALSE(sc.isPoison(e.fields));
  }
  CHECK(generatedClasses(wallet(), 2, 5, 42).size() == 3);
}

TEST_CASE("progress: time left, and silence off a terminal") {
  CHECK(Progress::timeLeft(10, 0, 10).empty());
  CHECK(Progress::timeLeft(10, 5, 10) == "~10 s left");
  CHECK(Progress::timeLeft(60, 1, 10) == "~9 min left");
  CHECK(Progress::timeLeft(10, 10, 10).empty());
  Progress p("x", 3, false);
  p.done(true);
  p.done();
  p.addTotal(2);
  CHECK(p.completed() == 2);
  CHECK(p.violations() == 1);
}

TEST_CASE("progress: with no total (a shrink), the line shows the count alone") {
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(::fileno(file), STDERR_FILENO);
  {
    Progress p("shrinking", 0, true);
    p.doneCount(12);
    p.setLabel("shrinking, 2 steps taken");
  }
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  std::rewind(file);
  std::string text;
  for (int c; (c = std::fgetc(file)) != EOF;) text += static_cast<char>(c);
  std::fclose(file);
  CHECK(text.find("shrinking, 2 steps taken: 12 schedules") != std::string::npos);
  CHECK(text.find('/') == std::string::npos);
  CHECK(text.find("left") == std::string::npos);
}

TEST_CASE("compare: an unknown schedule shows in its cell and in the target, also beside a failure") {
  std::vector<Class> classes{{"default", "schedule", "default schedule", ""},
                             {"retry", "retry", "retries", ""},
                             {"kill:COMMIT>XACK", "kill", "after COMMIT, before XACK", ""}};
  std::vector<JudgedCell> judged{
      {0, "default", "a/default", Verdict::Pass, {}, ""},
      {0, "retry", "a/retry#1", Verdict::Fail, {"duplicate"}, ""},
      {0, "retry", "a/retry#2", Verdict::Unknown, {}, ""},             // beside a failure in its own cell
      {0, "kill:COMMIT>XACK", "a/after:COMMIT#1", Verdict::Unknown, {}, "after:COMMIT#1"}, // a cell of its own
      {1, "default", "b/default", Verdict::Pass, {}, ""},
      {1, "retry", "b/retry#1", Verdict::Pass, {}, ""},
  };
  Matrix m = matrixOf(classes, columnsOf({"a", "b"}, {}), judged);
  REQUIRE(m.cells.size() == 6);
  CHECK(m.cells[1].verdict == Verdict::Fail);
  CHECK(m.cells[1].failed == 1);
  CHECK(m.cells[1].unknown == 1);
  CHECK(m.cells[2].verdict == Verdict::Unknown);
  CHECK(m.cells[2].points == std::vector<std::string>{"after:COMMIT#1"});
  CHECK(!m.cells[1].points); // a retry class has no fault points
  CHECK(m.cells[5].verdict == Verdict::NotApplicable); // b has no kill point of that class
  CHECK(m.targets[0].verdict == Verdict::Fail);
  CHECK(m.targets[0].unknownCells == 2);
  CHECK(m.targets[1].verdict == Verdict::Pass);
  CHECK(m.targets[1].unknownCells == 0);
  CHECK(m.verdict == Verdict::Fail);
  CHECK(m.unknownCells); // the command exits 2 on this, although a fails
  REQUIRE(m.examples[1]);
  CHECK(judged[*m.examples[1]].id == "a/retry#1"); // a failure is the example over an unknown
}

TEST_CASE("compare: a cell whose point its run never reached is n/a and counts for nothing") {
  // b's kill after its third offset commit: that run made two (a commit on a timer), and otherwise passed.
  std::vector<Class> classes{{"default", "schedule", "default schedule", ""},
                             {"kill:COMMIT_OFFSET>LEAVE_GROUP", "kill", "after COMMIT_OFFSET, before LEAVE_GROUP", ""}};
  std::vector<JudgedCell> judged{
      {0, "default", "b/default", Verdict::Pass, {}, ""},
      {0, "kill:COMMIT_OFFSET>LEAVE_GROUP", "b/after:COMMIT_OFFSET#3", Verdict::NotApplicable, {},
       "after:COMMIT_OFFSET#3", 1, 0},
  };
  Matrix m = matrixOf(classes, columnsOf({"b"}, {}), judged);
  REQUIRE(m.cells.size() == 2);
  CHECK(m.cells[1].verdict == Verdict::NotApplicable);
  CHECK(m.cells[1].unknown == 0);
  CHECK(m.cells[1].faultsFired == 0);
  CHECK(m.cells[1].faultsPlanned == 1);
  CHECK(m.targets[0].verdict == Verdict::Pass);
  CHECK(m.targets[0].unknownCells == 0);
}

TEST_CASE("compare: a failing cell names the anti-pattern of its example, a passing one none") {
  std::vector<Class> classes{{"default", "schedule", "default schedule", ""}, {"retry", "retry", "retries", ""}};
  std::vector<JudgedCell> judged{
      {0, "default", "a/default", Verdict::Pass, {}, "", 0, 0, ""},
      {0, "retry", "a/retry#1", Verdict::Fail, {"duplicate"}, "", 0, 0, "effect without dedup"},
      {1, "default", "b/default", Verdict::Fail, {"duplicate"}, "", 0, 0, ""}, // no known pattern
      {1, "retry", "b/retry#1", Verdict::Pass, {}, "", 0, 0, ""},
  };
  Matrix m = matrixOf(classes, columnsOf({"a", "b"}, {}), judged);
  REQUIRE(m.cells.size() == 4);
  CHECK(!m.cells[0].pattern);
  CHECK(m.cells[1].pattern == std::optional<std::string>("effect without dedup"));
  CHECK(!m.cells[2].pattern);
  CHECK(!m.cells[3].pattern);
  nlohmann::json j = m.cells[1];
  CHECK(j.at("pattern") == "effect without dedup");
  CHECK(j.get<CompareCell>() == m.cells[1]);
  CHECK(!nlohmann::json(m.cells[0]).contains("pattern"));
}

TEST_CASE("compare: under both sink policies a target is two columns, each folded alone") {
  CommonArgs args;
  Scenario withSink = wallet();
  CHECK(sinkPoliciesToCompare(withSink, args).empty()); // no sink: one column per target
  withSink.sink = SinkSpec{};
  CHECK(sinkPoliciesToCompare(withSink, args) == std::vector<std::string>{"honour", "ignore"});
  args.sinkPolicy = "ignore"; // the user fixed it: that one only
  CHECK(sinkPoliciesToCompare(withSink, args).empty());

  const auto cols = columnsOf({"call-then-commit", "keyed"}, {"honour", "ignore"});
  REQUIRE(cols.size() == 4);
  CHECK(cols[1].name == "call-then-commit");
  CHECK(cols[1].sinkPolicy == "ignore");
  CHECK(cols[2].target == 1);
  CHECK(cols[2].sinkPolicy == "honour");
  std::vector<Class> classes{{"default", "schedule", "default schedule", ""},
                             {"kill:CALL>BEGIN", "kill", "after the call (sink), before BEGIN", ""}};
  std::vector<JudgedCell> judged{
      {0, "default", "call-then-commit/honour/default", Verdict::Pass, {}, ""},
      {0, "kill:CALL>BEGIN", "call-then-commit/honour/after:CALL#1", Verdict::Fail, {"charged-twice"}, "after:CALL#1"},
      {1, "default", "call-then-commit/ignore/default", Verdict::Pass, {}, ""},
      {1, "kill:CALL>BEGIN", "call-then-commit/ignore/after:CALL#1", Verdict::Fail, {"charged-twice"}, "after:CALL#1"},
      {2, "default", "keyed/honour/default", Verdict::Pass, {}, ""},
      {2, "kill:CALL>BEGIN", "keyed/honour/after:CALL#1", Verdict::Pass, {}, "after:CALL#1"},
      {3, "default", "keyed/ignore/default", Verdict::Pass, {}, ""},
      {3, "kill:CALL>BEGIN", "keyed/ignore/after:CALL#1", Verdict::Fail, {"charged-twice"}, "after:CALL#1"},
  };
  Matrix m = matrixOf(classes, cols, judged);
  REQUIRE(m.targets.size() == 4);
  REQUIRE(m.cells.size() == 8);
  CHECK(m.targets[2].name == "keyed");
  CHECK(m.targets[2].sinkPolicy == "honour");
  CHECK(m.targets[2].verdict == Verdict::Pass);
  CHECK(m.targets[3].sinkPolicy == "ignore");
  CHECK(m.targets[3].verdict == Verdict::Fail);
  CHECK(m.targets[3].kinds == std::set<std::string>{"charged-twice"});
  CHECK(m.targets[3].column() == "keyed (ignore)");
  CHECK(m.cells[7].sinkPolicy == "ignore");
  CHECK(m.cells[7].example == "keyed/ignore/after:CALL#1");

  CompareSection section{.classes = classes, .targets = m.targets, .cells = m.cells, .sinkPolicies = {"honour", "ignore"}};
  const CompareCell* keyedIgnore = section.cell("kill:CALL>BEGIN", "keyed", "ignore");
  REQUIRE(keyedIgnore);
  CHECK(keyedIgnore->verdict == Verdict::Fail);
  CHECK(section.cell("kill:CALL>BEGIN", "keyed", "honour")->verdict == Verdict::Pass);
  CHECK(section.cell("kill:CALL>BEGIN", "keyed") == nullptr); // no column without a policy
  // The terminal table: a column per target and policy, the policy on a second header line.
  const std::string table = terminalTable(section);
  INFO(table);
  std::istringstream lines(table);
  std::string head, policies, row;
  std::getline(lines, head);
  std::getline(lines, policies);
  CHECK(head.find("keyed") != std::string::npos);
  CHECK(policies.rfind("  sink policy", 0) == 0);
  CHECK(occurrences(policies, "honour") == 2);
  CHECK(occurrences(policies, "ignore") == 2);
  std::getline(lines, row); // default schedule
  std::getline(lines, row); // the kill class: call-then-commit fails under both, keyed only under ignore
  CHECK(row.find("after the call (sink), before") == 2);
  CHECK(occurrences(row, "FAIL charged-twice") == 3);
  CHECK(occurrences(row, "pass") == 1);
  CHECK(row.rfind("pass") < row.rfind("FAIL")); // keyed: honour passes, ignore fails
}

TEST_CASE("compare: the terminal table prints a long class label whole, its cells in line") {
  std::vector<Class> classes{{"default", "schedule", "default schedule", ""},
                             {"kill:SYNC_GROUP>COMMIT_OFFSET", "kill", "after SYNC_GROUP, before COMMIT_OFFSET", ""}};
  const auto cols = columnsOf({"kafka-dedup-table", "kafka-commit-after"}, {});
  std::vector<JudgedCell> judged{
      {0, "default", "a/default", Verdict::Pass, {}, ""},
      {0, "kill:SYNC_GROUP>COMMIT_OFFSET", "a/k", Verdict::Pass, {}, "after:SYNC_GROUP#1"},
      {1, "default", "b/default", Verdict::Pass, {}, ""},
      {1, "kill:SYNC_GROUP>COMMIT_OFFSET", "b/k", Verdict::Fail, {"duplicate"}, "after:SYNC_GROUP#1"},
  };
  Matrix m = matrixOf(classes, cols, judged);
  CompareSection section{.classes = classes, .targets = m.targets, .cells = m.cells};
  const std::string table = terminalTable(section);
  INFO(table);
  std::istringstream lines(table);
  std::string head, first, second;
  std::getline(lines, head);
  std::getline(lines, first);
  std::getline(lines, second);
  CHECK(second.rfind("  after SYNC_GROUP, before COMMIT_OFFSET ", 0) == 0);
  // Every row's cells start where the header's do.
  CHECK(head.find("kafka-dedup-table") == first.find("pass"));
  CHECK(head.find("kafka-dedup-table") == second.find("pass"));
  CHECK(head.find("kafka-commit-after") == second.find("FAIL duplicate"));
}

TEST_CASE("compare: a class judged by a later retry runs after the last acknowledgement, not a shutdown step") {
  auto point = [](const std::string& text, int64_t op) {
    ClassedPoint p;
    p.fault = Fault::parse(text, "test");
    p.opIndex = op;
    return p;
  };
  // A Kafka member's trace: its last offset commit, then the LeaveGroup it sends as it closes.
  const std::vector<ClassedPoint> points{point("age:before:COMMIT_OFFSET#2", 7), point("age:after:COMMIT_OFFSET#2", 7),
                                         point("age:before:LEAVE_GROUP#1", 9), point("age:after:LEAVE_GROUP#1", 9)};
  CHECK(lastAcknowledgement(points, {3, 7}).fault.str() == "age:after:COMMIT_OFFSET#2");
  CHECK(lastAcknowledgement(points, {}).fault.str() == "age:after:LEAVE_GROUP#1"); // none acknowledged: the last
}

TEST_CASE("seeds: a generated schedule and a shuffled stream are pinned to their seed, on any standard library") {
  Scenario sc = wallet();
  Schedule s = generatedSchedule(sc, 6, 42);
  std::vector<std::string> wallets;
  for (const auto& e : s.events) wallets.push_back(e.fields.at("wallet"));
  INFO(nlohmann::json(wallets).dump());
  CHECK(wallets == std::vector<std::string>{"w3", "w1", "w1", "w1", "w2", "w1"});
  auto gen = generatedClasses(sc, 1, 6, 42);
  std::vector<int> shuffled;
  for (const auto& e : gen[2].schedules[0].stream) shuffled.push_back(e.event);
  INFO(nlohmann::json(shuffled).dump());
  CHECK(shuffled == std::vector<int>{2, 5, 2, 4, 3, 1, 6});
}

TEST_CASE("compare: the gaps around a sink's CALL are labelled as the call") {
  // A payments consumer: read, BEGIN, INSERT, CALL (the provider idemproof plays), COMMIT, XACK.
  std::vector<Op> history;
  auto add = [&](const std::string& proc, Record r) {
    Op op;
    op.index = static_cast<int64_t>(history.size());
    op.process = proc;
    op.record = std::move(r);
    history.push_back(std::move(op));
  };
  add("harness", ops::Plan{});
  add("c1", ops::Spawn{100, "c1", "/tmp/c1.log", "first"});
  std::map<std::string, int> k;
  auto step = [&](const std::string& server, const std::string& verb, std::vector<ops::Delivered> delivered = {},
                  std::vector<std::string> acked = {}) {
    ops::Step s;
    s.server = server;
    s.conn = 1;
    s.verb = verb;
    s.k = ++k[verb];
    s.detail = verb;
    s.delivered = std::move(delivered);
    s.acked = std::move(acked);
    add("c1", s);
  };
  step("valkey", "XREADGROUP", {{"1-0", {{"n", "1"}}}});
  step("pg", "BEGIN");
  step("pg", "INSERT");
  step("sink", "CALL");
  step("pg", "COMMIT");
  step("valkey", "XACK", {}, {"1-0"});
  std::map<std::string, std::string> classOf;
  for (const auto& p : classifyKillPoints(history)) classOf[p.fault.str()] = p.cls.label;
  CHECK(classOf["after:CALL#1"] == "after the call (sink), before COMMIT");
  CHECK(classOf["before:CALL#1"] == "after INSERT, before the call (sink)");
  CHECK(classOf["after:COMMIT#1"] == "after COMMIT, before XACK");
}

TEST_CASE("compare: a schedule of a class that did not fire all its faults, otherwise passing, is n/a to its cell") {
  Schedule s;
  s.faults = {Fault::parse("delay:c1:before:UPDATE#3:6000", "test"), Fault::parse("c1:after:COMMIT_OFFSET#1", "test")};
  auto judged = [&](std::vector<std::string> fired, Verdict balance) {
    Judged j;
    j.schedule = s;
    for (const auto& f : fired) j.history.append("c1", ops::FaultOp{Fault::parse(f, "test"), 9});
    j.results = {{"invariant:balance", balance, {}, ""},
                 {"faults", fired.size() == s.faults.size() ? Verdict::Pass : Verdict::Unknown, {}, "never fired"}};
    j.verdict = balance == Verdict::Fail ? Verdict::Fail : fired.size() == s.faults.size() ? Verdict::Pass : Verdict::Unknown;
    return j;
  };
  // The timer's acknowledgement came before the slowed step: the kill fired, the delay never did.
  CHECK(cellVerdict("slow:ack", s, judged({"c1:after:COMMIT_OFFSET#1"}, Verdict::Pass)) == Verdict::NotApplicable);
  CHECK(cellVerdict("slow:ack", s, judged({}, Verdict::Pass)) == Verdict::NotApplicable);
  CHECK(cellVerdict("slow:ack", s, judged({"delay:c1:before:UPDATE#3:6000", "c1:after:COMMIT_OFFSET#1"}, Verdict::Pass)) ==
        Verdict::Pass);
  // A violation is a failure whatever fired.
  CHECK(cellVerdict("slow:ack", s, judged({"c1:after:COMMIT_OFFSET#1"}, Verdict::Fail)) == Verdict::Fail);
  // Another checker that could not judge keeps the schedule unknown.
  Judged other = judged({"c1:after:COMMIT_OFFSET#1"}, Verdict::Pass);
  other.results[0].verdict = Verdict::Unknown;
  CHECK(cellVerdict("slow:ack", s, other) == Verdict::Unknown);
}
