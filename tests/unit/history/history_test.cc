// The typed history: every record's JSON mapping both ways, strict reading with the op and member named,
// the ops of earlier versions, and the points of a trace (one enumeration, one skip rule).
#include "history/history.h"
#include "history/trace.h"

#include <catch2/catch.hpp>

#include <set>

using namespace idem;
using nlohmann::json;

namespace {

/// One op of every type, as the supervisor writes them.
History everyKind() {
  History h;
  Schedule s;
  s.scenario = "wallet";
  s.events = {{1, {{"wallet", "w1"}, {"amount", "100"}}}};
  s.stream = {{1, 1}};
  s.faults = {Fault::parse("after:COMMIT#1")};
  h.append("harness", ops::Plan{s, "t", 20, "stream", "group", "honour", true});
  h.append("harness", ops::Initial{{{"balance", {{"w1", "0"}, {"w2", std::nullopt}}}}});
  h.append("producer", ops::Send{"1-0", 1, "uuid-1", {{"wallet", "w1"}, {"amount", "100"}}, 1, false});
  h.append("c1", ops::Spawn{42, "c1", "/tmp/c1.log", "first"});
  ops::Step read;
  read.server = "valkey";
  read.conn = 1;
  read.verb = "XREADGROUP";
  read.k = 1;
  read.detail = "XREADGROUP GROUP g c1 STREAMS s >";
  read.blocking = true;
  read.delivered = {{"1-0", {{"wallet", "w1"}}}};
  read.summary = "1 entries";
  h.append("c1", read);
  ops::Step commit;
  commit.server = "pg";
  commit.verb = "COMMIT";
  commit.k = 1;
  commit.outcome = ops::StepOutcome::KilledAfter;
  h.append("c1", commit);
  h.append("c1", ops::FaultOp{Fault::parse("after:COMMIT#1"), 9});
  ops::Exit e;
  e.signal = 9;
  e.by = "harness";
  h.append("c1", e);
  h.append("c1", ops::Note{"a note"});
  h.append("c2", ops::Opaque{"pg", 2, "client", 41, "not the PostgreSQL v3 protocol"});
  h.append("harness", ops::Stall{1, "1-0", true, "every consumer idle"});
  h.append("c1", ops::Escape{4242, "sleep 301"});
  ops::Final f;
  f.observed = {{"balance", {{"w1", "100"}}}};
  f.pending = {{"1-0", "c2", 5, 2}};
  f.stream = {"1-0"};
  f.lastDelivered = "1-0";
  f.end = ops::RunEnd::Limit;
  f.limit = "deadline";
  f.reason = "c2 silent for 58 s holding 1 entry";
  f.outboxPending = 3;
  f.settledUnseen = {"1-1"};
  h.append("harness", f);
  h.append("harness", ops::Error{"cannot start"});
  ops::Request rq;
  rq.id = 1;
  rq.op = 2;
  rq.role = "retry";
  rq.key = 1;
  rq.body = 1;
  rq.keyValue = "\"k\"";
  rq.ref = "r-1";
  rq.wait = "timeout";
  rq.server = "s1";
  rq.burst = 3;
  h.append("client", rq);
  ops::Response rs{1, "late", 201, "/orders/1", "00ff", "{}"};
  rs.jsonDigest = "00aa";
  rs.contentType = "application/json";
  rs.size = 2;
  h.append("client", rs);
  ops::Call call;
  call.id = 2;
  call.method = "POST";
  call.path = "/charges";
  call.keyHeader = true;
  call.key = "charge-uuid-1";
  call.ref = "uuid-1";
  call.digest = "00000000000000ab";
  call.outcome = "replayed";
  call.status = 200;
  call.execution = 1;
  h.append("sink", call);
  ops::Step term;
  term.server = "nats";
  term.verb = "TERM";
  term.k = 1;
  term.acked = {"7"};
  term.discards = true;
  term.error = true;
  term.transient = true;
  h.append("c1", term);
  ops::Step script;
  script.server = "valkey";
  script.verb = "EVALSHA";
  script.k = 1;
  script.unseen = true;
  script.script = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
  script.scriptCalls = {"XACK"};
  script.scriptIds = {"1-0"};
  script.deletesConsumer = "c2";
  h.append("c1", script);
  return h;
}

} // namespace

TEST_CASE("history: every record maps to JSON and back unchanged") {
  History h = everyKind();
  json j = h.toJson();
  std::set<std::string> types;
  for (const auto& op : j) types.insert(op["type"]);
  CHECK(types.size() == std::variant_size_v<Record>); // every kind of record
  CHECK(types == std::set<std::string>{"plan", "initial", "send", "spawn", "step", "fault", "exit", "note", "opaque",
                                       "stall", "escape", "final", "error", "request", "response", "call"});
  History back = History::fromJson(j);
  CHECK(back.toJson() == j);
  auto ops = back.ops();
  CHECK(ops[4].as<ops::Step>()->delivered.at(0).entry == "1-0");
  CHECK(ops[5].as<ops::Step>()->outcome == ops::StepOutcome::KilledAfter);
  const auto* term = ops[ops.size() - 2].as<ops::Step>();
  CHECK(term->discards);
  CHECK(term->transient);
  CHECK(ops.back().as<ops::Step>()->script == "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
  CHECK(ops.back().as<ops::Step>()->scriptCalls == std::vector<std::string>{"XACK"});
  CHECK(ops.back().as<ops::Step>()->scriptIds == std::vector<std::string>{"1-0"});
  CHECK(j.back()["value"]["script_ids"] == json::array({"1-0"}));
  CHECK(ops.back().as<ops::Step>()->deletesConsumer == "c2");
  CHECK(!ops[5].as<ops::Step>()->discards);
  CHECK(ops[6].as<ops::FaultOp>()->fault.str() == "after:COMMIT#1");
  CHECK(ops[1].as<ops::Initial>()->observed.at("balance")[1][1] == std::nullopt);
  CHECK(ops[12].as<ops::Final>()->end == ops::RunEnd::Limit);
  CHECK(ops[11].as<ops::Escape>()->command == "sleep 301");
  CHECK(j[12]["value"]["deadline"] == true);
  CHECK(ops[12].as<ops::Final>()->settledUnseen == std::vector<std::string>{"1-1"});
  CHECK(ops[15].as<ops::Response>()->jsonDigest == "00aa");
  CHECK(ops[15].as<ops::Response>()->size == 2);
  CHECK(ops[0].as<ops::Plan>()->claimIdleRedelivers);
  CHECK(j[0]["value"]["claim_idle_redelivers"] == true);
}

TEST_CASE("history: an age fault records what it did, and reads back the same") {
  History h;
  ops::Aged a;
  a.ms = 60000;
  a.keys = true;
  a.moved = 1;
  a.expired = 4;
  a.prune = "DELETE FROM processed_messages WHERE processed_at < now() - '-40000 milliseconds'::interval";
  a.pruned = 3;
  h.append("c1", ops::FaultOp{Fault::parse("age:after:XACK#5"), 0, a});
  ops::Aged onKafka; // no keys of the consumer's on the broker, no prune: only the time
  onKafka.ms = 90000;
  onKafka.skipped = "the target declares no dedup_ttl_ms: its retention job prunes nothing";
  h.append("c1", ops::FaultOp{Fault::parse("age:after:COMMIT#2:90000"), 0, onKafka});
  json j = h.toJson();
  CHECK(j[0]["value"]["aged"] == json{{"ms", 60000}, {"moved", 1}, {"expired", 4}, {"prune", a.prune}, {"pruned", 3}});
  CHECK(!j[1]["value"]["aged"].contains("expired"));
  History back = History::fromJson(j);
  CHECK(back.toJson() == j);
  const auto read = back.ops();
  const auto* f = read[0].as<ops::FaultOp>();
  REQUIRE(f->aged);
  CHECK(f->aged->expired == 4);
  CHECK(f->aged->keys);
  CHECK(!read[1].as<ops::FaultOp>()->aged->keys);
}

TEST_CASE("history: opsFrom gives what came since an index, nothing past the end") {
  History h;
  h.append("c1", ops::Note{"a"});
  h.append("c1", ops::Note{"b"});
  CHECK(h.opsFrom(0).size() == 2);
  auto since = h.opsFrom(1);
  REQUIRE(since.size() == 1);
  CHECK(since[0].index == 1);
  CHECK(since[0].as<ops::Note>()->message == "b");
  CHECK(h.opsFrom(2).empty());
  CHECK(h.opsFrom(7).empty());
  h.append("c2", ops::Note{"c"});
  REQUIRE(h.opsFrom(2).size() == 1);
  CHECK(h.opsFrom(2)[0].process == "c2");
}

TEST_CASE("history: reading is strict and names the op and the member") {
  json j = everyKind().toJson();
  auto message = [](const json& ops) {
    try {
      History::fromJson(ops);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  SECTION("a send without its entry") {
    j[2]["value"].erase("entry");
    CHECK(message(j) == "op 2 (send): 'entry' is missing");
  }
  SECTION("a step whose k is text") {
    j[4]["value"]["k"] = "one";
    CHECK(message(j) == "op 4 (step): 'k' is not an integer");
  }
  SECTION("an outcome nobody defined") {
    j[5]["value"]["outcome"] = "exploded";
    CHECK(message(j) == "op 5 (step): 'outcome' 'exploded' is not an outcome of docs/steps.md");
  }
  SECTION("a final op without pending entries") {
    j[12]["value"].erase("pending");
    CHECK(message(j) == "op 12 (final): 'pending' is missing or not an array");
  }
  SECTION("an unknown op type") {
    j[9]["type"] = "teleport";
    CHECK(message(j) == "op 9 (teleport): unknown op type 'teleport'");
  }
  SECTION("a fault that is no fault") {
    j[6]["value"]["fault"] = "sideways:COMMIT#1";
    CHECK(message(j).rfind("op 6 (fault): 'sideways:COMMIT#1': 'sideways' is no fault kind", 0) == 0);
  }
}

TEST_CASE("history: ops of earlier versions still read (kill, cut, a final op without end)") {
  json old = json::array({
      {{"index", 0}, {"time_us", 1}, {"type", "kill"}, {"process", "c1"}, {"value", {{"point", "after:SET#3"}, {"signal", 9}}}},
      {{"index", 1}, {"time_us", 2}, {"type", "step"}, {"process", "c1"},
       {"value", {{"server", "valkey"}, {"verb", "XACK"}, {"k", 1}, {"outcome", "cut"}}}},
      {{"index", 2}, {"time_us", 3}, {"type", "final"}, {"process", "harness"},
       {"value", {{"observed", json::object()}, {"pending", json::array()}, {"undelivered", json::array({"1-2"})},
                  {"deadline", false}}}},
  });
  auto ops = History::fromJson(old).ops();
  CHECK(ops[0].as<ops::FaultOp>()->fault.str() == "after:SET#3");
  CHECK(ops[1].as<ops::Step>()->outcome == ops::StepOutcome::Forwarded);
  CHECK(ops[2].as<ops::Final>()->end == ops::RunEnd::Stuck);
  old[2]["value"]["deadline"] = true;
  CHECK(History::fromJson(old).ops()[2].as<ops::Final>()->end == ops::RunEnd::Limit);
}

TEST_CASE("trace: two points per step, none for empty reads, cut steps or the harness's SELECT") {
  History h;
  auto step = [&](const std::string& proc, const std::string& server, const std::string& verb, int k, bool empty = false,
                  ops::StepOutcome outcome = ops::StepOutcome::Ok) {
    ops::Step s;
    s.server = server;
    s.verb = verb;
    s.k = k;
    s.empty = empty;
    s.outcome = outcome;
    s.tReqUs = static_cast<int64_t>(h.ops().size());
    h.append(proc, s);
  };
  step("c1", "valkey", "SELECT", 1);
  step("c1", "valkey", "XREADGROUP", 1, true);
  step("c1", "valkey", "XREADGROUP", 2);
  step("c1", "pg", "BEGIN", 1);
  step("c1", "pg", "COMMIT", 1);
  step("c1", "valkey", "XACK", 1);
  step("c1", "valkey", "XREADGROUP", 3, false, ops::StepOutcome::Forwarded);
  Trace t = traceOf(h.ops());
  std::vector<std::string> points;
  for (const auto& p : t.points) points.push_back(p.fault.str() + " " + p.prevVerb + ">" + p.nextVerb);
  CHECK(points == std::vector<std::string>{
                      "before:XREADGROUP#2 >BEGIN", "after:XREADGROUP#2 >BEGIN", "before:BEGIN#1 XREADGROUP>COMMIT",
                      "after:BEGIN#1 XREADGROUP>COMMIT", "before:COMMIT#1 BEGIN>XACK", "after:COMMIT#1 BEGIN>XACK",
                      "before:XACK#1 COMMIT>", "after:XACK#1 COMMIT>"});
  REQUIRE(t.skipped.size() == 2);
  CHECK(t.skipped[0].step == "XREADGROUP#1");
  CHECK(t.skipped[0].reason == "a read that delivered nothing");
  CHECK(t.skipped[1].step == "XREADGROUP#3");
  CHECK(t.skipped[1].reason == "in flight when the run ended");
}

TEST_CASE("set-up: what clients send as they connect is set-up, INFO, PING and SET only before the connection's work") {
  // At any time: the URL's secret and database, the protocol, the connection's name and library.
  for (const char* verb : {"AUTH", "SELECT", "HELLO"}) {
    CHECK(setUpCommand("valkey", verb, std::string(verb) + " x", false));
    CHECK(setUpCommand("valkey", verb, std::string(verb) + " x", true));
  }
  CHECK(setUpCommand("valkey", "CLIENT", "client setname c1", true));
  CHECK(setUpCommand("valkey", "CLIENT", "CLIENT SETINFO LIB-NAME ioredis", false));
  // node-redis 5.9 and later, on every connection (a server of a cluster's maintenance notices; Valkey 7 refuses it).
  CHECK(setUpCommand("valkey", "CLIENT", "CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type external-ip", true));
  CHECK_FALSE(setUpCommand("valkey", "CLIENT", "CLIENT TRACKING ON", false)); // it changes what the server sends
  CHECK_FALSE(setUpCommand("valkey", "CLIENT", "CLIENT", false));
  // ioredis's ready check and a handshake PING; later, the target's own health check stays a step.
  CHECK(setUpCommand("valkey", "INFO", "info", false));
  CHECK(setUpCommand("valkey", "PING", "PING", false));
  CHECK_FALSE(setUpCommand("valkey", "INFO", "info", true));
  CHECK_FALSE(setUpCommand("valkey", "PING", "PING", true));
  CHECK_FALSE(setUpCommand("valkey", "XREADGROUP", "XREADGROUP GROUP g c1 STREAMS s >", false));
  // A driver's session parameters, before its first statement; the SQL SELECT is never set-up.
  CHECK(setUpCommand("pg", "SET", "SET application_name = 'x'", false));
  CHECK(setUpCommand("pg", "SHOW", "SHOW server_version", false));
  CHECK_FALSE(setUpCommand("pg", "SET", "SET LOCAL lock_timeout = '1s'", true));
  CHECK_FALSE(setUpCommand("pg", "SELECT", "SELECT 1", false));
  CHECK_FALSE(setUpCommand("pg", "AUTH", "AUTH", false));
  CHECK(stepCounter("SELECT", true) != stepCounter("SELECT", false));
}

TEST_CASE("trace: set-up steps have no points, are numbered apart and keep their flag and tables through JSON") {
  History h;
  auto step = [&](const std::string& server, const std::string& verb, int k, bool setUp,
                  std::vector<std::string> tables = {}) {
    ops::Step s;
    s.server = server;
    s.verb = verb;
    s.k = k;
    s.setUp = setUp;
    s.tables = std::move(tables);
    s.tReqUs = static_cast<int64_t>(h.ops().size());
    h.append("c1", s);
  };
  // ioredis as it connects (CLIENT SETNAME, its INFO ready check), then the work; its own PING later.
  step("valkey", "CLIENT", 1, true);
  step("valkey", "INFO", 1, true);
  step("pg", "SET", 1, true);
  step("valkey", "SELECT", 1, true); // the URL's database: a SQL SELECT#1 stays the first SQL SELECT
  step("valkey", "XREADGROUP", 1, false);
  step("pg", "SELECT", 1, false, {"seen_events"});
  step("valkey", "PING", 1, false);
  Trace t = traceOf(h.ops());
  std::vector<std::string> points;
  for (const auto& p : t.points) points.push_back(p.fault.str());
  CHECK(points == std::vector<std::string>{"before:XREADGROUP#1", "after:XREADGROUP#1", "before:SELECT#1",
                                           "after:SELECT#1", "before:PING#1", "after:PING#1"});
  CHECK(t.skipped.empty()); // set-up is no step of the target's: not even a skipped one
  std::vector<std::string> numbered;
  for (const auto& p : processSteps(h.ops(), "c1")) numbered.push_back(p.step->name() + "/" + std::to_string(p.k));
  CHECK(numbered == std::vector<std::string>{"CLIENT#1/1", "INFO#1/1", "SET#1/1", "SELECT#1/1", "XREADGROUP#1/1",
                                             "SELECT#1/1", "PING#1/1"});
  auto back = History::fromJson(h.toJson()).ops();
  CHECK(back[0].as<ops::Step>()->setUp);
  CHECK_FALSE(back[4].as<ops::Step>()->setUp);
  CHECK(back[5].as<ops::Step>()->tables == std::vector<std::string>{"seen_events"});
  CHECK(h.toJson()[4]["value"].contains("set_up") == false); // written only when set
}

TEST_CASE("trace: a shutdown's steps are numbered as any but have no points, and keep their flag through JSON") {
  // kombu cancels its consumer (basic.cancel) once idemproof sends SIGTERM; kafkajs leaves its group.
  History h;
  auto step = [&](const std::string& verb, int k, bool stopping) {
    ops::Step s;
    s.server = "rabbitmq";
    s.verb = verb;
    s.k = k;
    s.stopping = stopping;
    s.tReqUs = static_cast<int64_t>(h.ops().size());
    h.append("c1", s);
  };
  step("DELIVER", 1, false);
  step("ACK", 1, false);
  step("CANCEL", 1, true);
  Trace t = traceOf(h.ops());
  std::vector<std::string> points;
  for (const auto& p : t.points) points.push_back(p.fault.str());
  CHECK(points == std::vector<std::string>{"before:DELIVER#1", "after:DELIVER#1", "before:ACK#1", "after:ACK#1"});
  REQUIRE(t.skipped.size() == 1);
  CHECK(t.skipped[0].step == "CANCEL#1");
  CHECK(t.skipped[0].reason == "sent while idemproof stopped its process (its shutdown)");
  auto back = History::fromJson(h.toJson()).ops();
  CHECK(back[2].as<ops::Step>()->stopping);
  CHECK_FALSE(back[1].as<ops::Step>()->stopping);
  CHECK(h.toJson()[1]["value"].contains("stopping") == false); // written only when set
}

TEST_CASE("history: a final op's dead letters map to JSON and back, and are absent without poison") {
  History h;
  ops::Final f;
  f.deadLetterWhere = "table dead_letters";
  f.deadLetters = {{"1", std::string("uuid-3")}, {"2", std::nullopt}};
  h.append("harness", f);
  h.append("harness", ops::Final{});
  json j = h.toJson();
  CHECK(j[0]["value"]["dead_letter"] ==
        json::parse(R"({"where": "table dead_letters", "entries": [{"id": "1", "event_id": "uuid-3"},
                                                                   {"id": "2", "event_id": null}]})"));
  CHECK_FALSE(j[1]["value"].contains("dead_letter"));
  auto back = History::fromJson(j).ops();
  const auto* fin = back[0].as<ops::Final>();
  REQUIRE(fin->deadLetters.size() == 2);
  CHECK(fin->deadLetters[0].eventId == std::optional<std::string>("uuid-3"));
  CHECK_FALSE(fin->deadLetters[1].eventId);
  CHECK(back[1].as<ops::Final>()->deadLetterWhere.empty());
  CHECK(History::fromJson(j).toJson() == j);
}

TEST_CASE("trace: no error point at a PostgreSQL group ended by Flush, which an error fault cannot answer") {
  // postgres.js and asyncpg send Parse and Describe ended by Flush: the proxy can't stand in for the reply.
  History h;
  ops::Step parse;
  parse.server = "pg";
  parse.verb = "PARSE";
  parse.k = 1;
  parse.flushed = true;
  h.append("c1", parse);
  ops::Step insert;
  insert.server = "pg";
  insert.verb = "INSERT";
  insert.k = 1;
  insert.tReqUs = 10;
  h.append("c1", insert);
  const Trace t = traceOf(h.ops());
  REQUIRE(t.points.size() == 4);
  auto kinds = [&](size_t i) {
    std::vector<std::string> out;
    for (const auto& f : faultsAt(t.points[i], {"kill", "error"}, 100)) out.push_back(f.str());
    return out;
  };
  CHECK(kinds(0) == std::vector<std::string>{"before:PARSE#1"});
  CHECK(kinds(2) == std::vector<std::string>{"before:INSERT#1", "error:before:INSERT#1"});
  auto back = History::fromJson(h.toJson()).ops();
  CHECK(back[0].as<ops::Step>()->flushed);
  CHECK_FALSE(back[1].as<ops::Step>()->flushed);
}

TEST_CASE("history: the note after a restart tells a process that made no new connection, and no other") {
  const ops::Note none = ops::Note::afterRestart("pg", "restart:after:COMMIT#1:pg", ops::Note::noNewConnection("c1"));
  CHECK(none.message == "after the pg restart (restart:after:COMMIT#1:pg): c1 made no new connection");
  CHECK(none.saysNoNewConnection("c1"));
  CHECK_FALSE(none.saysNoNewConnection("1"));
  CHECK_FALSE(ops::Note::afterRestart("pg", "restart:after:COMMIT#1:pg", ops::Note::noNewConnection("c11")).saysNoNewConnection("c1"));
  CHECK_FALSE(ops::Note::afterRestart("pg", "restart:after:COMMIT#1:pg", "c1 reconnected").saysNoNewConnection("c1"));
  CHECK_FALSE(ops::Note{"c1 made no new connection"}.saysNoNewConnection("c1"));
}
