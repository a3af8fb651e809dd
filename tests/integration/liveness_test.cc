/// Busy, idle and stuck under real clients (docs/verdicts.md "How a run ends"): a consumer that holds entries
/// is busy whatever read handed them over, so a correct slow consumer passes a kill however long it works on
/// each entry; holding entries untouched until the deadline is unknown, named; a consumer whose client does not
/// reconnect after a Valkey restart is named quickly, one that reconnects on a timer longer than the stall time
/// passes; a Node consumer on ioredis's own reconnect passes every fault kind.
#include "support.h"

#include <catch2/catch.hpp>

#include <future>
#include <set>

using namespace itest;

namespace {

/// The final op's reason of the report's first run.
std::string finalReason(const nlohmann::json& report) {
  for (const auto& r : report["runs"])
    for (const auto& op : r["history"])
      if (op["type"] == "final") return op["value"].value("reason", "");
  return "";
}

/// Every stall op's reason of the report's first run.
std::vector<std::string> stalls(const nlohmann::json& report) {
  std::vector<std::string> out;
  for (const auto& r : report["runs"]) {
    for (const auto& op : r["history"])
      if (op["type"] == "stall") out.push_back(op["value"].value("reason", ""));
    break;
  }
  return out;
}

} // namespace

TEST_CASE("liveness: slow, silent and disconnected consumers told apart: pass, unknown, stuck") {
  // Four commands at once: each consumer mostly sleeps or waits for a deadline.
  auto rs = cleanAll({// The consumer's latest step is an empty XREADGROUP BLOCK 1000 while it works through what
                      // XAUTOCLAIM handed it, 3.5 s each (above --stall-timeout): busy, never restarted as idle,
                      // never stuck. Two generated events and a producer retry (3 entries), the kill after the
                      // first COMMIT: the replacement claims all three (one committed, one new, one retry).
                      {"run", "--target", testTarget("py-one-shot"), "--events", "2", "--seed", "1", "--crash",
                       "after:COMMIT#1"},
                      {"run", "--target", testTarget("py-holds-forever"), "--deadline", "8s"},
                      // It holds nothing when the restart cuts its blocking read, and never makes another
                      // request: stuck once idle for CLAIM_IDLE_MS + --stall-timeout (1 s), long before the deadline.
                      {"run", "--target", testTarget("py-valkey-gone"), "--crash", "restart:before:XREADGROUP#2:valkey",
                       "--stall-timeout", "1s"},
                      // Holding entries when its connection is cut, it may still be calling out.
                      {"run", "--target", testTarget("py-valkey-gone"), "--crash", "restart:before:XACK#2:valkey",
                       "--deadline", "10s"},
                      // Its client waits 10 s before it reads again on a new connection (Bunny's reconnect after
                      // a dropped connection, at its defaults), longer than twice CLAIM_IDLE_MS + --stall-timeout:
                      // a stall after a fault is proven only once it lasted as long again and 15 s at least.
                      {"run", "--target", testTarget("py-reconnect-late"), "--crash", "drop:before:XREADGROUP#2"}});
  {
    INFO("a one-shot consumer working 3.5 s per entry after XAUTOCLAIM and an empty read passes a kill");
    const Result& r = rs[0];
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(r.report["verdict"] == "pass");
    CHECK(stalls(r.report).empty());
  }
  {
    INFO("a consumer that blocks forever holding entries is unknown at the deadline, named, never stuck");
    const Result& r = rs[1];
    INFO(r.out << r.err);
    REQUIRE(r.status == 2);
    CHECK(r.report["verdict"] == "unknown");
    CHECK(violations(r.report, "stuck").empty());
    CHECK(violations(r.report, "lost").empty());
    CHECK(stalls(r.report).empty());
    CHECK(finalReason(r.report).find("c1 silent for") != std::string::npos);
    CHECK(finalReason(r.report).find("holding 6 entries") != std::string::npos);
  }
  {
    INFO("a consumer whose client does not reconnect after a Valkey restart is stuck, named at once");
    const Result& r = rs[2];
    INFO(r.out << r.err);
    REQUIRE(r.status == 1);
    CHECK(!violations(r.report, "stuck").empty());
    const std::string why = finalReason(r.report);
    CHECK(why.find("c1 made no request for") != std::string::npos);
    CHECK(why.find("after the Valkey restart (restart:before:XREADGROUP#2:valkey): its client did not reconnect") !=
          std::string::npos);
    CHECK(why.find(", twice;") != std::string::npos);
    CHECK(why.find("needs a larger --stall-timeout") != std::string::npos);
  }
  {
    INFO("the same, cut while it holds entries: unknown at the deadline, named");
    const Result& held = rs[3];
    INFO(held.out << held.err);
    REQUIRE(held.status == 2);
    CHECK(violations(held.report, "stuck").empty());
    CHECK(finalReason(held.report).find("its connection was cut under XACK#2 (valkey)") != std::string::npos);
  }
  {
    INFO("a client that reads again 10 s after its read was dropped recovers by itself: pass, its wait noted");
    const Result& r = rs[4];
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(r.report["verdict"] == "pass");
    CHECK(stalls(r.report).empty());
    bool waited = false;
    for (const auto& op : r.report["runs"][0]["history"])
      if (op["type"] == "note" &&
          op["value"].value("message", "").find("waiting as long again, and 15 s at least, for it to recover by itself") !=
              std::string::npos)
        waited = true;
    CHECK(waited);
  }
}

TEST_CASE("liveness: slowed correct consumers in Python, Node and C++ pass a sweep with kills", "[slow]") {
  // 750 ms of work per entry before its transaction, 1.5 times a --stall-timeout of 500 ms (the consumers poll
  // every 100 ms); a generated schedule of two events keeps the sweep short (docs/benchmarks.md has the full
  // sweeps of the default schedule at 1.5 s against 1 s). The consumers mostly sleep: four workers per sweep
  // (30 kill points each) overlap their work.
  auto sweep = [](std::string target) {
    return idemproof({"sweep", "--target", target, "--events", "2", "--seed", "1", "--stall-timeout", "500ms",
                      "--workers", "4"},
                     0, true, {{"WORK_MS", "750"}});
  };
  auto py = std::async(std::launch::async, sweep, testTarget("py-dedup-table"));
  auto node = std::async(std::launch::async, sweep, testTarget("node-dedup-table"));
  auto cpp = std::async(std::launch::async, sweep, target("dedup-table"));
  for (Result r : {py.get(), node.get(), cpp.get()}) {
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.report["verdict"] == "pass");
    CHECK(r.out.find("0 unknown") != std::string::npos);
    CHECK(leftovers(r.tag).empty());
  }
}

TEST_CASE("liveness: a Node consumer on ioredis's own reconnect passes a check with every fault kind, restarts included") {
  // Generated schedules only: seed 14's first 12 draw every kind, a Valkey restart among them (ioredis's own
  // reconnect is the point), and runs of two consumers (holds need them) whose points at c2's k-th step may
  // go unreached: coverage loss, not an unknown. The class sweep's kills end the process whatever its
  // reconnect setting: the slowed sweep above kills the same consumer (node-dedup-table, without RECONNECT)
  // at every step.
  Result r = clean({"check", "--target", testTarget("node-reconnect"), "--seed", "14", "--runs", "12", "--faults",
                    "kill,drop,delay,error,forget,restart,hold", "--no-class-sweep"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.report["verdict"] == "pass");
  std::set<std::string> kinds; // "restart:c1:before:XACK#2:valkey" -> restart
  bool valkeyRestart = false;
  for (const auto& run : r.report["check"]["run_summaries"])
    for (const auto& f : run.value("fired", nlohmann::json::array())) {
      const std::string text = f.get<std::string>();
      kinds.insert(text.substr(0, text.find(':')));
      valkeyRestart = valkeyRestart || (text.rfind("restart:", 0) == 0 && text.find(":valkey") != std::string::npos);
    }
  INFO(nlohmann::json(kinds).dump());
  CHECK(kinds.count("restart") == 1);
  CHECK(valkeyRestart);
}
