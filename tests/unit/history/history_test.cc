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
  h.append("harness", ops::Plan{s, "t", 20, "stream", "group"});
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
                                       "stall", "escape", "final", "error", "request", "response"});
  History back = History::fromJson(j);
  CHECK(back.toJson() == j);
  auto ops = back.ops();
  CHECK(ops[4].as<ops::Step>()->delivered.at(0).entry == "1-0");
  CHECK(ops[5].as<ops::Step>()->outcome == ops::StepOutcome::KilledAfter);
  CHECK(ops[6].as<ops::FaultOp>()->fault.str() == "after:COMMIT#1");
  CHECK(ops[1].as<ops::Initial>()->observed.at("balance")[1][1] == std::nullopt);
  CHECK(ops[12].as<ops::Final>()->end == ops::RunEnd::Limit);
  CHECK(ops[11].as<ops::Escape>()->command == "sleep 301");
  CHECK(j[12]["value"]["deadline"] == true);
  CHECK(ops[15].as<ops::Response>()->jsonDigest == "00aa");
  CHECK(ops[15].as<ops::Response>()->size == 2);
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
