// Client requests of HTTP schedules (plan/client_op.h): the JSON form each way, and one clear error per
// malformed member.
#include "core/error.h"
#include "plan/schedule.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace idem;
using nlohmann::json;

namespace {

std::string opError(const json& j) {
  try {
    clientOpFromJson(j, "s.json", "client[0]");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("client ops: every kind maps to JSON and back", "[plan]") {
  std::vector<ClientOp> ops{ClientOp{},
                            ClientOp{ClientOp::Kind::Send, ClientOp::Wait::Timeout, 1, 2},
                            ClientOp{ClientOp::Kind::Send, ClientOp::Wait::CutBody, 3, 3},
                            ClientOp{ClientOp::Kind::Burst, ClientOp::Wait::Answer, 2, 2, 8, 3},
                            ClientOp{ClientOp::Kind::NoKey, ClientOp::Wait::Answer, 0, 4}};
  ClientOp bad{ClientOp::Kind::BadKey, ClientOp::Wait::Answer, 0, 5};
  bad.malformed = "unterminated";
  ops.push_back(bad);
  ClientOp late;
  late.afterRetention = true;
  ops.push_back(late);
  for (const auto& op : ops) {
    json j = op;
    INFO(j.dump());
    CHECK(clientOpFromJson(j, "x", "client[0]") == op);
  }
  CHECK(ops[1].str() == "send key 1 body 2 (timeout)");
  CHECK(ops[3].str() == "burst 8 of 2 +3");
  CHECK(bad.str() == "bad-key 5 (unterminated)");
}

TEST_CASE("client ops: a malformed request is named by its field", "[plan]") {
  CHECK(opError(json{{"op", "get"}}) == "s.json: field 'client[0].op': 'get' is not one of send, burst, no-key, bad-key");
  CHECK(opError(json{{"op", "send"}}) == "s.json: field 'client[0].key': is required (the event whose Idempotency-Key is sent)");
  CHECK(opError(json{{"op", "burst"}, {"key", 1}, {"copies", 17}}) ==
        "s.json: field 'client[0].copies': 17 is not a whole number from 2 to 16");
  CHECK(opError(json{{"op", "no-key"}, {"key", 1}, {"body", 1}}) == "s.json: field 'client[0].key': a no-key request sends no key");
  CHECK(opError(json{{"op", "send"}, {"key", 1}, {"wait", "never"}}).find("field 'client[0].wait'") != std::string::npos);
  CHECK(opError(json{{"op", "send"}, {"key", 1}, {"colour", 1}}).find("field 'client[0].colour': unknown field") !=
        std::string::npos);
}

TEST_CASE("client ops: an HTTP schedule file has requests instead of a stream, each naming events it has", "[plan]") {
  json s = json::parse(R"({"version": 2, "scenario": "orders", "events": [{"n": 1, "fields": {"sku": "sku-1"}}],
                           "client": [{"op": "send", "key": 1}, {"op": "send", "key": 1, "wait": "timeout"}], "faults": []})");
  Schedule x = scheduleFromJson(s, "s.json");
  CHECK(x.http());
  CHECK(x.summary() == "2 requests [send 1, send 1 (timeout)], faults []");
  CHECK(scheduleFromJson(json(x), "again") .client == x.client);
  s["client"][1]["body"] = 2;
  try {
    scheduleFromJson(s, "s.json");
    FAIL("no error");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()) == "s.json: field 'client[1]': no event 2");
  }
}

TEST_CASE("client ops: an HTTP schedule runs one server process and the fault kinds an HTTP run carries out", "[plan]") {
  json s = json::parse(R"({"version": 2, "scenario": "orders", "events": [{"n": 1}, {"n": 2}],
                           "client": [{"op": "send", "key": 1}], "faults": []})");
  auto error = [](const json& j) {
    try {
      scheduleFromJson(j, "s.json");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  json three = s;
  three["consumers"] = 3;
  CHECK(error(three) ==
        "s.json: field 'consumers': 3 consumers: an HTTP schedule runs server replicas (\"replicas\"); leave consumers out");
  json hold = s;
  hold["faults"] = {"hold:s1:before:COMMIT#1:100"};
  CHECK(error(hold).find("s.json: field 'faults[0]': a hold needs a second server process to hold against") == 0);
  for (const char* f : {"forget:after:COMMIT#1", "age:after:COMMIT#1"}) {
    json x = s;
    x["faults"] = {f};
    INFO(f);
    CHECK(error(x).find("s.json: field 'faults[0]': an HTTP scenario runs kill, drop, delay, error, restart, pause "
                        "faults at its server's steps, not ") != std::string::npos);
  }
  json point = s;
  point["faults"] = {"pause:before:COMMIT#1:s2:after:COMMIT#1"};
  CHECK(error(point).find("an HTTP run with one replica has one server process, so a pause ends at a time") != std::string::npos);
  point["faults"] = {"pause:before:COMMIT#1:c2:after:COMMIT#1"};
  CHECK(error(point).find("an HTTP run's processes are its server's, s1..s1 (its replicas) and the ones that replace "
                          "them, not c2") != std::string::npos);
  json ok = s;
  ok["faults"] = {"after:COMMIT#1",        "drop:before:INSERT#1",     "delay:after:UPDATE#1:100", "error:before:SELECT#1",
                  "restart:after:COMMIT#2:pg", "pause:before:COMMIT#3", "pause:after:INSERT#2:200"};
  CHECK(scheduleFromJson(ok, "s.json").faults.size() == 7);
  json burst = s;
  burst["client"] = {{{"op", "burst"}, {"key", 2}, {"copies", 3}, {"other", 2}}};
  CHECK(error(burst).find("field 'client[0].other': 2 is the burst's own key") != std::string::npos);
}

TEST_CASE("client ops: a send aged within the retention, or reordered, maps to JSON and back", "[plan]") {
  ClientOp aged;
  aged.agedMs = 500;
  ClientOp reordered;
  reordered.reordered = true;
  for (const auto& op : {aged, reordered}) {
    json j = op;
    CHECK(clientOpFromJson(j, "s.json", "client[0]") == op);
  }
  CHECK(aged.str() == "send 1 (aged 500 ms)");
  CHECK(reordered.str() == "send 1 (reordered)");
  CHECK(opError({{"op", "send"}, {"key", 1}, {"aged_ms", 10001}}) ==
        "s.json: field 'client[0].aged_ms': 10001 is not a whole number from 1 to 10000");
  CHECK(opError({{"op", "send"}, {"key", 1}, {"aged_ms", 5}, {"after_retention", true}}) ==
        "s.json: field 'client[0].aged_ms': after_retention already waits out the retention");
  CHECK(opError({{"op", "no-key"}, {"body", 1}, {"reordered", true}}) ==
        "s.json: field 'client[0].reordered': only a send reorders its payload's fields");
}

TEST_CASE("client ops: replicas, a request's replica and a split burst map to JSON and back", "[plan]") {
  json s = json::parse(R"({"version": 2, "scenario": "orders", "events": [{"n": 1}], "replicas": 2,
                           "client": [{"op": "send", "key": 1, "replica": 2},
                                      {"op": "burst", "key": 1, "copies": 3, "split": true}],
                           "faults": ["kill:s2:after:COMMIT#1", "hold:s1:before:COMMIT#1:s2:after:COMMIT#1"]})");
  Schedule x = scheduleFromJson(s, "s.json");
  CHECK(x.replicas == 2);
  CHECK(x.client[0].replica == 2);
  CHECK(x.client[1].split);
  CHECK(x.faults[0].process == "s2");
  CHECK(x.faults[1].args == std::vector<std::string>{"s2", "after", "COMMIT#1"});
  CHECK(x.summary() == "2 requests [send 1 to s2, burst 3 of 1 split], faults [s2:after:COMMIT#1, "
                       "hold:s1:before:COMMIT#1:s2:after:COMMIT#1], 2 replicas");
  json back = x;
  CHECK(back["replicas"] == 2);
  CHECK(back["client"][0]["replica"] == 2);
  CHECK(back["client"][1]["split"] == true);
  CHECK(scheduleFromJson(back, "s.json").client == x.client);
  // The copies of a split burst go round robin from its replica; a send to its own.
  CHECK(x.client[1].replicaOf(1, 2) == 1);
  CHECK(x.client[1].replicaOf(2, 2) == 2);
  CHECK(x.client[1].replicaOf(3, 2) == 1);
  CHECK(x.client[0].replicaOf(1, 2) == 2);
  CHECK(ClientOp{}.replicaOf(1, 3) == 1);
  // One replica by default: nothing written.
  json one = scheduleFromJson(json::parse(R"({"version": 2, "scenario": "o", "events": [{"n": 1}],
                                             "client": [{"op": "send", "key": 1}]})"), "s.json");
  CHECK(!one.contains("replicas"));
}

TEST_CASE("client ops: a bad replicas, replica or split is one line naming the field", "[plan]") {
  auto error = [](const std::string& text) {
    try {
      Schedule x = scheduleFromJson(json::parse(text), "s.json");
      checkFaultProcesses(x, [](size_t i) { return "s.json: field 'faults[" + std::to_string(i) + "]'"; });
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string head = R"({"version": 2, "scenario": "orders", "events": [{"n": 1}], )";
  CHECK(error(head + R"("replicas": 4, "client": [{"op": "send", "key": 1}]})") ==
        "s.json: field 'replicas': 4 is not a whole number from 1 to 3");
  CHECK(error(head + R"("replicas": 0, "client": [{"op": "send", "key": 1}]})") ==
        "s.json: field 'replicas': 0 is not a whole number from 1 to 3");
  CHECK(error(head + R"("client": [{"op": "send", "key": 1, "replica": 2}]})") ==
        "s.json: field 'client[0].replica': replica 2 of a schedule with 1 replica (\"replicas\")");
  CHECK(error(head + R"("client": [{"op": "send", "key": 1, "split": true}]})") ==
        "s.json: field 'client[0].split': only a burst's copies are split across the replicas");
  CHECK(error(head + R"("stream": [1], "replicas": 2})").find("s.json: field 'replicas': only an HTTP schedule") == 0);
  CHECK(error(head + R"("replicas": 2, "client": [{"op": "send", "key": 1}], "faults": ["kill:s4:after:COMMIT#1"]})") ==
        "s.json: field 'faults[0]': 's4:after:COMMIT#1' names process s4, which no run of this schedule starts: 2 "
        "replicas (s1..s2) and at most 0 replacements by its other faults");
  CHECK(error(head + R"("replicas": 2, "client": [{"op": "send", "key": 1}], "faults": ["after:COMMIT#1", "kill:s3:after:COMMIT#2"]})")
            .empty());
  CHECK(error(head + R"("replicas": 2, "client": [{"op": "send", "key": 1}], "faults": ["kill:c1:after:COMMIT#1"]})")
            .find("an HTTP run's processes are its server's") != std::string::npos);
  CHECK(error(head + R"("stream": [1], "faults": ["kill:s1:after:COMMIT#1"]})")
            .find("sN names an HTTP server process") != std::string::npos);
}
