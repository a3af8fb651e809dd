// Faults as values: the text form parsed and printed in one place, kinds registered in one list, kill
// points of earlier versions keep their meaning, schedule files of version 1 still load.
#include "core/error.h"
#include "plan/fault_kind.h"
#include "plan/schedule.h"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <functional>

using namespace idem;

namespace {

std::string usageError(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("fault: kill points are kills, printed as they were written") {
  Fault f = Fault::parse("after:COMMIT#3");
  CHECK(f.kind == "kill");
  CHECK(f.when == When::After);
  CHECK(f.verb == "COMMIT");
  CHECK(f.k == 3);
  CHECK(f.str() == "after:COMMIT#3");
  CHECK(Fault::parse("kill:before:xack#2").str() == "before:XACK#2");
  CHECK(Fault::parse("BEFORE:xack#2") == Fault::kill(When::Before, "XACK", 2));
  CHECK(faultKind("kill", "test").effect(f).action == Effect::Action::Kill);
}

TEST_CASE("fault: bad text names the flag and says the form") {
  CHECK(usageError([] { Fault::parse("after:COMMIT", "--crash"); }) ==
        "--crash: 'after:COMMIT': missing '#k' (expected [KIND:][cN:|rN:|sN:]before|after:VERB#k[:ARG...], e.g. "
        "after:COMMIT#3 or drop:after:XACK#2 or c2:after:COMMIT#1 or kill:r1:after:COMMIT#1 or kill:s2:after:COMMIT#1; kinds: kill, drop, delay, error, forget, restart, hold, timekill, rebalance, age, "
        "pause)");
  CHECK(usageError([] { Fault::parse("sideways:COMMIT#1"); }).find("'sideways' is no fault kind, nor before or after") !=
        std::string::npos);
  CHECK(usageError([] { Fault::parse("after:COMMIT#0"); }).find("k counts from 1") != std::string::npos);
  CHECK(usageError([] { Fault::parse("after:COMMIT#1:5"); }).find("a kill fault takes no arguments") != std::string::npos);
  CHECK(usageError([] { Fault::parse("after:COM MIT#1"); }).find("verb has a character") != std::string::npos);
}

TEST_CASE("fault: the built-in kinds beyond kill, their arguments and their effects") {
  Fault drop = Fault::parse("drop:after:COMMIT#2");
  CHECK(drop.str() == "drop:after:COMMIT#2");
  CHECK(faultKind("drop", "test").effect(drop).action == Effect::Action::Drop);
  CHECK(usageError([] { Fault::parse("drop:after:COMMIT#2:1", "--crash"); }).find("a drop fault takes no arguments") !=
        std::string::npos);

  Fault delay = Fault::parse("delay:before:XACK#1:250");
  Effect d = faultKind("delay", "test").effect(delay);
  CHECK(d.action == Effect::Action::Delay);
  CHECK(d.time == std::chrono::milliseconds(250));
  CHECK(usageError([] { Fault::parse("delay:before:XACK#1", "--crash"); }).find("takes 1 argument") != std::string::npos);
  for (const char* bad : {"delay:before:XACK#1:0", "delay:before:XACK#1:x", "delay:before:XACK#1:600001"})
    CHECK(usageError([&] { Fault::parse(bad, "--crash"); }).find("whole number of milliseconds from 1 to 600000") !=
          std::string::npos);

  Fault serial = Fault::parse("error:before:UPDATE#1:40001");
  Effect e = faultKind("error", "test").effect(serial);
  CHECK(e.action == Effect::Action::Error);
  CHECK(e.code == "40001");
  CHECK(e.server == "pg");
  CHECK(!e.fatal);
  CHECK(faultKind("error", "test").effect(Fault::parse("error:before:COMMIT#1:57p01")).fatal);
  CHECK(faultKind("error", "test").effect(Fault::parse("error:before:XACK#1:loading")).server == "valkey");
  // Without a code: the step's server's transient error, chosen when it fires.
  CHECK(faultKind("error", "test").effect(Fault::parse("error:before:XACK#1")).code.empty());
  CHECK(defaultError("pg").code == "40001");
  CHECK(defaultError("pg", When::Before, "UPDATE", true).code == "40001");
  CHECK(defaultError("valkey").code == "LOADING");
  // Where PostgreSQL can fail only by ending the session: a statement on no data, a new connection.
  // A round trip of Close or Sync messages alone too: PostgreSQL fails neither but by ending the session, and
  // a client need not read their answer (tokio-postgres closes a dropped statement without waiting).
  for (const char* verb : {"BEGIN", "START", "ROLLBACK", "SAVEPOINT", "SET", "SHOW", "CLOSE", "SYNC"}) {
    INFO(verb);
    CHECK(defaultError("pg", When::Before, verb, false).code == "57P01");
    CHECK(defaultError("pg", When::Before, verb, false).fatal);
  }
  CHECK(defaultError("pg", When::Before, "BEGIN", true).code == "40001"); // BEGIN; UPDATE …; COMMIT in one step
  CHECK(defaultError("pg", When::Before, "SELECT", false).code == "40001");
  // A SELECT on no table, its text known: a wait on a lock may deadlock; a try-lock, an unlock or a SELECT of
  // values reads nothing and waits on nothing, so only its session can fail it; another call may read data.
  auto tableless = [](const char* sql) { return defaultError("pg", When::Before, "SELECT", false, sql).code; };
  CHECK(tableless("SELECT pg_advisory_xact_lock(hashtext($1))") == "40P01");
  CHECK(tableless("select pg_advisory_lock_shared(42)") == "40P01");
  CHECK(tableless("SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok") == "57P01");
  CHECK(tableless("SELECT pg_advisory_unlock(hashtextextended($1, 0))") == "57P01");
  CHECK(tableless("SELECT pg_advisory_unlock_all()") == "57P01");
  CHECK(tableless("SELECT 1") == "57P01");
  CHECK(tableless("SELECT apply_payment($1, $2)") == "40001");
  // The Parse that prepares such a SELECT (a driver that prepares its statements) fails alike.
  CHECK(defaultError("pg", When::Before, "PARSE", false, "SELECT pg_advisory_unlock(hashtextextended($1, 0))").code == "57P01");
  CHECK(defaultError("pg", When::Before, "PARSE", false, "SELECT pg_advisory_lock(42)").code == "40P01");
  CHECK(defaultError("pg", When::Before, "PARSE", false, "SELECT balance FROM wallets WHERE id = $1").code == "40001");
  CHECK(defaultError("pg", When::Before, "SELECT", true, "SELECT pg_advisory_unlock(1) FROM orders").code == "40001");
  CHECK(defaultError("pg", When::Before, "PARSE", false).code == "40001"); // a prepare is waited for
  CHECK(defaultError("pg", When::Before, "CONNECT").code == "53300");
  CHECK(usageError([] { Fault::parse("error:before:CLOSE#3:40001", "--crash"); })
            .find(": PostgreSQL answers CLOSE with no 40001 (it fails a Close or a Sync only by ending the session): "
                  "give 57P01, or leave out the code") != std::string::npos);
  CHECK(usageError([] { Fault::parse("error:before:SYNC#1:40p01", "--crash"); }).find("with no 40P01") != std::string::npos);
  CHECK(Fault::parse("error:before:CLOSE#3:57P01", "--crash").args.at(0) == "57P01");
  CHECK(usageError([] { Fault::parse("error:after:COMMIT#1:40001", "--crash"); }).find("acts before its step only") !=
        std::string::npos);
  CHECK(usageError([] { Fault::parse("error:before:COMMIT#1:12345", "--crash"); })
            .find("no error '12345' (errors: 40001, 40P01, 57P01, 53300, LOADING, BUSY, OOM, READONLY, NOGROUP, "
                   "REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, NOT_COORDINATOR, "
                   "COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, "
                   "PERMISSIONS_VIOLATION, CONNECTION_FORCED, INTERNAL_ERROR, 500 to 599 (HTTP, the sink))") !=
        std::string::npos);

  Fault forget = Fault::parse("forget:after:XACK#3");
  CHECK(faultKind("forget", "test").effect(forget).action == Effect::Action::Forget);
  CHECK(forget.str() == "forget:after:XACK#3");
  CHECK(faultKinds() ==
        std::vector<std::string>{"kill", "drop", "delay", "error", "forget", "restart", "hold", "timekill", "rebalance",
                                 "age", "pause"});
  // timekill acts at a time, not at a step: --faults (check, sweep) can't name it.
  CHECK(stepFaultKinds() == std::vector<std::string>{"kill", "drop", "delay", "error", "forget", "restart", "hold",
                                                     "rebalance", "age", "pause"});
  Effect until = faultKind("hold", "test").effect(Fault::parse("hold:c1:before:COMMIT#1:c2:after:XACK#2"));
  CHECK(until.action == Effect::Action::Hold);
  CHECK(until.until == "c2:after:XACK#2");
  CHECK(faultKind("hold", "test").effect(Fault::parse("hold:c1:before:COMMIT#1:250")).time == std::chrono::milliseconds(250));
  CHECK(usageError([] { Fault::parse("hold:before:COMMIT#1", "--crash"); }).find("a hold names the process it holds") !=
        std::string::npos);
  CHECK(usageError([] { Fault::parse("hold:c1:before:COMMIT#1:c1:after:XACK#1", "--crash"); })
            .find("can't wait for the process it holds") != std::string::npos);
  CHECK(faultKind("restart", "test").effect(Fault::parse("restart:after:COMMIT#1:pg")).server == "pg");
  CHECK(usageError([] { Fault::parse("restart:after:COMMIT#1:mysql", "--crash"); }).find("names its server, pg, valkey, kafka, nats or rabbitmq") !=
        std::string::npos);
}

TEST_CASE("fault: cN: names one process's steps, and a schedule says how many consumers run at once") {
  Fault f = Fault::parse("c2:after:COMMIT#1");
  CHECK(f.process == "c2");
  CHECK(f.isKill());
  CHECK(f.str() == "c2:after:COMMIT#1");
  CHECK(f.step() == "c2:COMMIT#1");
  Fault d = Fault::parse("drop:C3:before:xack#2");
  CHECK(d.kind == "drop");
  CHECK(d.process == "c3");
  CHECK(d.str() == "drop:c3:before:XACK#2");
  CHECK(!f.samePoint(Fault::parse("after:COMMIT#1")));
  CHECK(!Fault::parse("c1:after:COMMIT#1").samePoint(f));
  CHECK(Fault::parse("kill:c2:after:COMMIT#1") == f);
  CHECK(usageError([] { Fault::parse("c0:after:COMMIT#1"); }).find("is no fault kind") != std::string::npos);

  nlohmann::json j = {{"version", 2}, {"scenario", "wallet"}, {"events", {{{"n", 1}}}}, {"stream", {1}},
                      {"faults", {"c2:after:COMMIT#1", "after:COMMIT#1"}}};
  Schedule one = scheduleFromJson(j, "s.json");
  CHECK(one.consumers == 1); // absent: one, as every earlier file means
  CHECK(!nlohmann::json(one).contains("consumers"));
  CHECK(one.faults.size() == 2); // c2's COMMIT#1 and the run's COMMIT#1 are two points
  j["consumers"] = 2;
  Schedule two = scheduleFromJson(j, "s.json");
  CHECK(two.consumers == 2);
  CHECK(nlohmann::json(two)["consumers"] == 2);
  CHECK(two.summary().find(", 2 consumers") != std::string::npos);
  j["consumers"] = 5;
  CHECK(usageError([&] { scheduleFromJson(j, "s.json"); }).find("field 'consumers'") != std::string::npos);
}

TEST_CASE("schedule: version 2 carries faults, version 1 files (kills) still load, others are named") {
  nlohmann::json j = {{"version", 1}, {"scenario", "wallet"}, {"events", {{{"n", 1}}}}, {"stream", {1}},
                      {"kills", {"after:COMMIT#1"}}};
  Schedule s = scheduleFromJson(j, "old.json");
  REQUIRE(s.faults.size() == 1);
  CHECK(s.faults[0].str() == "after:COMMIT#1");
  nlohmann::json now = s;
  CHECK(now["version"] == 2);
  CHECK(now["faults"] == nlohmann::json::array({"after:COMMIT#1"}));
  CHECK(!now.contains("kills"));
  CHECK(nlohmann::json(scheduleFromJson(now, "new.json")) == now);
  j["version"] = 3;
  CHECK(usageError([&] { scheduleFromJson(j, "x.json"); }) ==
        "x.json: field 'version': 3 is not a schedule version this idemproof reads (1 or 2)");
  j.erase("version");
  CHECK(usageError([&] { scheduleFromJson(j, "x.json"); }) ==
        "x.json: field 'version': missing is not a schedule version this idemproof reads (1 or 2)");
  j["version"] = "1";
  CHECK(usageError([&] { scheduleFromJson(j, "x.json"); }) == "x.json: field 'version': must be an integer");
  now["faults"] = {"after:COMMIT#1", "kill:after:COMMIT#1"};
  CHECK(usageError([&] { scheduleFromJson(now, "y.json"); }) ==
        "y.json: field 'faults[1]': a second fault at after:COMMIT#1");
}

TEST_CASE("schedule: a misspelt or mistyped field is refused, naming it, never dropped") {
  const nlohmann::json ok = {{"version", 2}, {"scenario", "wallet"}, {"events", {{{"n", 1}}}}, {"stream", {1}},
                             {"faults", {"after:XACK#1"}}};
  CHECK(scheduleFromJson(ok, "s.json").faults.size() == 1);
  auto refused = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json j = ok;
    change(j);
    return usageError([&] { scheduleFromJson(j, "s.json"); });
  };
  // A fault under a misspelt name would have run no fault at all: a pass of an acknowledge-first consumer.
  CHECK(refused([](auto& j) { j["fault"] = j["faults"]; j.erase("faults"); }) ==
        "s.json: field 'fault': unknown field (known: version, scenario, target, seed, restart, events, stream, "
        "client, faults, consumers, replicas, claim_idle_ms, values, sink_policy)");
  CHECK_THAT(refused([](auto& j) { j["kills"] = j["faults"]; }), Catch::Matchers::StartsWith("s.json: field 'kills': unknown"));
  CHECK_THAT(refused([](auto& j) { j["stream"] = {{{"event", 1}, {"phse", 2}}}; }),
             Catch::Matchers::StartsWith("s.json: field 'stream[0].phse': unknown field (known: event, phase, inflight)"));
  CHECK_THAT(refused([](auto& j) { j["events"][0]["feilds"] = nlohmann::json::object(); }),
             Catch::Matchers::StartsWith("s.json: field 'events[0].feilds': unknown field"));
  CHECK(refused([](auto& j) { j["scenario"] = 5; }) == "s.json: field 'scenario': 5 is not a string");
  CHECK(refused([](auto& j) { j["target"] = 5; }) == "s.json: field 'target': 5 is not a string");
  CHECK(refused([](auto& j) { j["restart"] = 5; }) == "s.json: field 'restart': 5 is not a string");
  CHECK(refused([](auto& j) { j["values"] = 5; }) == "s.json: field 'values': 5 is not a string");
}

TEST_CASE("schedule: a sink policy of its own is kept, absent when it has none, and checked") {
  nlohmann::json j = {{"version", 2}, {"scenario", "payments"}, {"events", {{{"n", 1}}}}, {"stream", {1}}};
  Schedule none = scheduleFromJson(j, "s.json");
  CHECK(none.sinkPolicy.empty());
  CHECK(!nlohmann::json(none).contains("sink_policy")); // files of earlier versions are unchanged
  j["sink_policy"] = "ignore";
  Schedule ignore = scheduleFromJson(j, "s.json");
  CHECK(ignore.sinkPolicy == "ignore");
  CHECK(nlohmann::json(ignore)["sink_policy"] == "ignore");
  CHECK(scheduleFromJson(nlohmann::json(ignore), "again.json").sinkPolicy == "ignore");
  j["sink_policy"] = "sometimes";
  CHECK(usageError([&] { scheduleFromJson(j, "s.json"); }) ==
        "s.json: field 'sink_policy': \"sometimes\" is not a sink policy (\"honour\" or \"ignore\")");
}

TEST_CASE("schedule: a fault naming a process the run never starts is refused, naming where it is written") {
  nlohmann::json j = {{"version", 2}, {"scenario", "wallet"}, {"events", {{{"n", 1}}}}, {"stream", {1}}, {"consumers", 2},
                      {"faults", {"c5:after:COMMIT#1"}}};
  auto refusal = [&] {
    Schedule s = scheduleFromJson(j, "s.json");
    return usageError([&] { checkFaultProcesses(s, [](size_t i) { return "s.json: field 'faults[" + std::to_string(i) + "]'"; }); });
  };
  std::string e = refusal();
  CHECK(e.find("s.json: field 'faults[0]'") != std::string::npos);
  CHECK(e.find("names process c5, which no run of this schedule starts: 2 consumers") != std::string::npos);
  j["faults"] = {"hold:c9:before:COMMIT#1"};
  CHECK(refusal().find("names process c9") != std::string::npos);
  j["faults"] = {"hold:c1:before:COMMIT#1:c7:after:XACK#1"}; // the process a hold waits for, too
  CHECK(refusal().find("names process c7") != std::string::npos);
  // Each kill (or other fault that can end a process) may bring one replacement; a restart may replace all.
  j["faults"] = {"c1:after:COMMIT#1", "c3:after:XACK#1"};
  CHECK(refusal().empty());
  j["faults"] = {"restart:after:COMMIT#1:pg", "c4:after:XACK#1"};
  CHECK(refusal().empty());
  j["faults"] = {"pause:before:COMMIT#1:c7:after:XACK#1"}; // the process a pause waits for
  CHECK(refusal().find("names process c7") != std::string::npos);
  j["faults"] = {"pause:c1:after:COMMIT#1", "c3:after:XACK#1"}; // a pause ends no process
  CHECK(refusal().find("names process c3") != std::string::npos);
  j["faults"] = {"delay:c1:after:COMMIT#1:500", "c3:after:XACK#1"}; // a delay ends no process
  CHECK(refusal().find("names process c3") != std::string::npos);
}

TEST_CASE("fault: rebalance is a group's fault on a broker that has one, told to no process") {
  Fault r = Fault::parse("rebalance:after:SELECT#3");
  CHECK(r.str() == "rebalance:after:SELECT#3");
  const FaultKind& kind = faultKind("rebalance", "test");
  CHECK(kind.effect(r).action == Effect::Action::Join);
  CHECK(kind.brokerFeature() == "rebalance");
  CHECK(!kind.leavesAftermath()); // the waiting process is told nothing: exiting later is not its handling
  CHECK(!kind.atHttpServer());
  for (const char* k : {"kill", "drop", "delay", "error", "forget", "restart", "hold", "timekill"})
    CHECK(faultKind(k, "test").brokerFeature().empty());
  CHECK(usageError([] { Fault::parse("rebalance:after:SELECT#3:2", "--crash"); })
            .find("a rebalance fault takes no arguments") != std::string::npos);
  // Its phrase in a story, as each kind's.
  auto title = [](const std::string& s) { return s == "pg" ? std::string("PostgreSQL") : s; };
  CHECK(kind.phrase(r, "c1", title) == "a consumer joined the group at rebalance:after:SELECT#3 while c1 waited");
  CHECK(faultKind("drop", "test").phrase(Fault::parse("drop:after:COMMIT#1"), "c1", title) ==
        "c1's connection dropped at drop:after:COMMIT#1");
  CHECK(faultKind("restart", "test").phrase(Fault::parse("restart:after:COMMIT#1:pg"), "c1", title) ==
        "PostgreSQL restarted at restart:after:COMMIT#1:pg");
}

TEST_CASE("fault: pause stops the process at its step, for a time or until another process's point") {
  const FaultKind& kind = faultKind("pause", "test");
  // Printed back as written, with and without a process, a time or a releasing point.
  for (const char* text : {"pause:before:COMMIT#1", "pause:c1:after:SELECT#2:1500", "pause:before:COMMIT#1:c2:after:XACK#1",
                           "pause:c2:before:XACK#1:c1:before:COMMIT#2"})
    CHECK(Fault::parse(text).str() == text);
  Fault plain = Fault::parse("pause:before:COMMIT#1");
  CHECK(plain.kind == "pause");
  CHECK(plain.process.empty());
  CHECK(plain.when == When::Before);
  Effect e = kind.effect(plain);
  CHECK(e.action == Effect::Action::Pause);
  CHECK(e.time == std::chrono::milliseconds(0)); // the broker's hand-over time (Broker::pauseMs)
  CHECK(e.until.empty());
  CHECK(kind.effect(Fault::parse("pause:c1:after:SELECT#2:1500")).time == std::chrono::milliseconds(1500));
  CHECK(kind.effect(Fault::parse("pause:before:COMMIT#1:c2:after:XACK#1")).until == "c2:after:XACK#1");
  // Its JSON is its text, as every fault's.
  CHECK(nlohmann::json(plain).get<Fault>() == plain);
  CHECK(usageError([] { Fault::parse("pause:before:COMMIT#1:0", "--crash"); }).find("from 1 to 600000") !=
        std::string::npos);
  CHECK(usageError([] { Fault::parse("pause:before:COMMIT#1:600001", "--crash"); }).find("from 1 to 600000") !=
        std::string::npos);
  CHECK(usageError([] { Fault::parse("pause:before:COMMIT#1:c2:soon", "--crash"); })
            .find("a pause ends at another process's point") != std::string::npos);
  CHECK(usageError([] { Fault::parse("pause:c1:before:COMMIT#1:c1:after:XACK#1", "--crash"); })
            .find("can't wait for the process it stops") != std::string::npos);
  // Asked for, never drawn by default (existing seeds keep their schedules); every broker has it.
  CHECK(!kind.drawnByDefault());
  CHECK(kind.brokerFeature().empty());
  CHECK(kind.leavesAftermath()); // it lives on, and must cope with what it finds when it wakes
  CHECK(kind.atHttpServer());    // an HTTP server is stopped at its step too, for a time
  CHECK(httpFaultKinds() == std::vector<std::string>{"kill", "drop", "delay", "error", "restart", "pause"});
  CHECK(kind.weight() == 1);
  auto title = [](const std::string& s) { return s; };
  CHECK(kind.phrase(plain, "c1", title) == "c1 paused (SIGSTOP) at pause:before:COMMIT#1");
  CHECK(kind.sweepClass(plain).id == "pause");
  CHECK(kind.sweepClass(plain).label == "paused past the claim time, another consumer claimed");
  CHECK(kind.comparedConsumers() == std::vector<int>{1, 2}); // compare runs its class alone and with c2
  CHECK(faultKind("drop", "test").comparedConsumers() == std::vector<int>{1});
  // A sweep pauses at every point, for the broker's time.
  CHECK(kind.sweptAt(Fault::parse("before:COMMIT#2"), "pg", 60)->str() == "pause:before:COMMIT#2");
  CHECK(kind.sweptAt(Fault::parse("c2:after:XACK#1"), "valkey", 60)->str() == "pause:c2:after:XACK#1");
  // A schedule file carries it in its text form, and reads back the same.
  nlohmann::json j = {{"version", 2}, {"scenario", "wallet"}, {"events", {{{"n", 1}}}}, {"stream", {1}}, {"consumers", 2},
                      {"faults", {"pause:c1:before:COMMIT#1:c2:after:XACK#1", "pause:c2:after:SELECT#1:1500"}}};
  Schedule sched = scheduleFromJson(j, "s.json");
  REQUIRE(sched.faults.size() == 2);
  CHECK(sched.faults[0].process == "c1");
  CHECK(sched.faults[0].args == std::vector<std::string>{"c2", "after", "XACK#1"});
  CHECK(nlohmann::json(sched)["faults"] == j["faults"]);
  CHECK(nlohmann::json(scheduleFromJson(nlohmann::json(sched), "again.json")) == nlohmann::json(sched));
}

TEST_CASE("fault: age makes simulated time pass for the dedup state, by MS or the retry window") {
  const FaultKind& kind = faultKind("age", "test");
  CHECK(Fault::parse("age:after:XACK#5").str() == "age:after:XACK#5");
  CHECK(kind.effect(Fault::parse("age:after:XACK#5")).action == Effect::Action::Age);
  CHECK(kind.effect(Fault::parse("age:after:XACK#5")).time.count() == 0); // the scenario's retry window
  CHECK(kind.effect(Fault::parse("age:before:COMMIT#1:86400000")).time.count() == 86400000);
  CHECK(kind.weight() == 0);         // time passing delivers nothing
  CHECK(!kind.drawnByDefault());     // asked for: --faults age
  CHECK(!kind.leavesAftermath());
  CHECK(kind.judgedByLateRetry());
  CHECK(kind.sweepClass(Fault::parse("age:after:XACK#5")).label == "dedup window");
  CHECK(usageError([] { Fault::parse("age:after:XACK#5:0", "--crash"); })
            .find("the age MS must be a whole number of milliseconds from 1 to 31622400000 (a year)") != std::string::npos);
  CHECK(usageError([] { Fault::parse("age:after:XACK#5:1:2", "--crash"); }).find("an age fault takes at most one argument, MS") != std::string::npos);
  auto title = [](const std::string& s) { return s; };
  CHECK(kind.phrase(Fault::parse("age:after:XACK#5"), "c1", title) == "the dedup state aged at age:after:XACK#5");
  // Swept after each step, of any server, with the scenario's window.
  CHECK(kind.sweptAt(Fault::parse("after:COMMIT#2"), "pg", 60)->str() == "age:after:COMMIT#2");
  CHECK(!kind.sweptAt(Fault::parse("before:COMMIT#2"), "pg", 60));
}

TEST_CASE("fault: each kind says where a sweep applies it, before and after a step of each server") {
  const Fault before = Fault::parse("before:COMMIT#2"), after = Fault::parse("after:XACK#1");
  auto at = [](const char* kind, const Fault& point, const std::string& server) {
    auto f = faultKind(kind, "test").sweptAt(point, server, 60);
    return f ? f->str() : std::string("-");
  };
  CHECK(at("kill", before, "pg") == "before:COMMIT#2");
  CHECK(at("drop", after, "valkey") == "drop:after:XACK#1");
  CHECK(at("delay", before, "pg") == "delay:before:COMMIT#2:60");
  CHECK(at("error", before, "pg") == "error:before:COMMIT#2");
  CHECK(at("error", after, "valkey") == "-"); // an error after the step took effect is not what a server does
  CHECK(at("error", Fault::parse("after:CALL#1"), "sink") == "error:after:CALL#1"); // a provider may charge, then fail
  CHECK(at("restart", Fault::parse("after:CALL#1"), "sink") == "-");                // idemproof's own server
  CHECK(at("forget", after, "valkey") == "forget:after:XACK#1");
  CHECK(at("forget", after, "pg") == "-");
  CHECK(at("forget", before, "valkey") == "-");
  CHECK(at("restart", after, "valkey") == "restart:after:XACK#1:valkey");
  CHECK(at("hold", before, "pg") == "-");     // drawn as an interleaving, never swept at a step
  CHECK(at("timekill", before, "pg") == "-"); // at a time, not a step
  CHECK(at("rebalance", before, "pg") == "rebalance:before:COMMIT#2");
  // And its class in a comparison's matrix: one per server for restarts, on whichever broker.
  auto cls = [](const char* text) {
    const Fault f = Fault::parse(text);
    return faultKind(f.kind, "test").sweepClass(f);
  };
  CHECK(cls("drop:after:COMMIT#1").label == "drop after a step (ambiguous)");
  CHECK(cls("restart:after:XACK#1:valkey").id == "restart:valkey");
  CHECK(cls("restart:after:FETCH#1:kafka").label == "Kafka restarted");
  CHECK(cls("restart:before:COMMIT#1:pg").label == "PostgreSQL restarted");
  CHECK(cls("rebalance:after:SELECT#1").id == "rebalance");
}

TEST_CASE("fault: an HTTP status 500 to 599 is the sink's error, and only a CALL step may answer one after") {
  const Effect e = faultKind("error", "test").effect(Fault::parse("error:before:CALL#2:503"));
  CHECK(e.code == "503");
  CHECK(e.server == "sink");
  CHECK(e.message == "Service Unavailable");
  CHECK(faultKind("error", "test").effect(Fault::parse("error:after:CALL#2:500")).server == "sink");
  CHECK(faultKind("error", "test").effect(Fault::parse("error:after:CALL#1")).code.empty());
  CHECK(defaultError("sink", When::Before).code == "503");
  CHECK(defaultError("sink", When::After).code == "500");
  // A 5xx is the sink's, at its CALL steps only: elsewhere it would never be applied (the run unknown for a
  // fault that "never fired"), so it is refused, naming the broker's own errors (RabbitMQ's 541 is one).
  CHECK(usageError([] { Fault::parse("error:before:COMMIT#1:599", "--crash"); })
            .find("599 is an HTTP status, which only the sink's CALL steps answer; at COMMIT give") != std::string::npos);
  CHECK(usageError([] { Fault::parse("error:before:DELIVER#3:541", "--crash"); }).find("INTERNAL_ERROR for 541") !=
        std::string::npos);
  CHECK(Fault::parse("error:before:DELIVER#3:INTERNAL_ERROR", "--crash").args.at(0) == "INTERNAL_ERROR");
  CHECK(usageError([] { Fault::parse("error:before:CALL#1:404", "--crash"); }).find("no error '404'") !=
        std::string::npos);
  CHECK(usageError([] { Fault::parse("error:before:CALL#1:5000", "--crash"); }).find("no error '5000'") !=
        std::string::npos);
  CHECK(usageError([] { Fault::parse("error:after:CALL#1:40001", "--crash"); })
            .find("only an HTTP status (500 to 599) of the sink may answer after") != std::string::npos);
  CHECK(usageError([] { Fault::parse("error:after:COMMIT#1:500", "--crash"); }).find("acts before its step only") !=
        std::string::npos);
}

TEST_CASE("fault: rN: names the target's outbox relay, a replacement of it being r2, r3, …") {
  Fault k = Fault::parse("kill:r1:after:COMMIT#1");
  CHECK(k.isKill());
  CHECK(k.process == "r1");
  CHECK(k.str() == "r1:after:COMMIT#1");
  CHECK(k.step() == "r1:COMMIT#1");
  CHECK(Fault::parse("r1:after:COMMIT#1") == k);
  Fault d = Fault::parse("drop:R2:before:update#3");
  CHECK(d.kind == "drop");
  CHECK(d.process == "r2");
  CHECK(d.str() == "drop:r2:before:UPDATE#3");
  Fault l = Fault::parse("delay:r1:after:SELECT#2:300");
  CHECK(l.process == "r1");
  CHECK(l.args == std::vector<std::string>{"300"});
  CHECK(!k.samePoint(Fault::parse("c1:after:COMMIT#1")));
  CHECK(isRelayLabel("r1"));
  CHECK(isRelayLabel("r12"));
  CHECK(!isRelayLabel("c1"));
  CHECK(!isRelayLabel("r0"));
  CHECK(!isRelayLabel("r"));
  CHECK(isProcessLabel("r3"));
  CHECK(usageError([] { Fault::parse("r0:after:COMMIT#1"); }).find("is no fault kind") != std::string::npos);
  CHECK(usageError([] { Fault::parse("x:after:COMMIT#1"); }).find("rN:") != std::string::npos);

  // r1 is always started (with a relay); each other fault that can end a relay brings one replacement.
  nlohmann::json j = {{"version", 2}, {"scenario", "wallet"}, {"events", {{{"n", 1}}}}, {"stream", {1}},
                      {"faults", {"r1:after:COMMIT#1"}}};
  auto refusal = [&] {
    Schedule s = scheduleFromJson(j, "s.json");
    return usageError([&] { checkFaultProcesses(s, [](size_t i) { return "faults[" + std::to_string(i) + "]"; }); });
  };
  CHECK(refusal().empty());
  CHECK(nlohmann::json(scheduleFromJson(j, "s.json"))["faults"] == nlohmann::json::array({"r1:after:COMMIT#1"}));
  j["faults"] = {"r1:after:COMMIT#1", "r2:before:UPDATE#1"};
  CHECK(refusal().empty());
  j["faults"] = {"r2:after:COMMIT#1"};
  CHECK(refusal().find("names process r2, which no run of this schedule starts: the relay r1") != std::string::npos);
  j["faults"] = {"delay:r1:after:COMMIT#1:500", "r2:after:COMMIT#1"}; // a delay ends no relay
  CHECK(refusal().find("names process r2") != std::string::npos);
}
