// A target's second process: the outbox relay (docs/target-contract.md, "An outbox relay"). It runs as r1
// beside the consumers, behind its own proxies; a fault names it (r1:VERB#k); a killed relay is replaced
// (r2) and must drain the outbox, and a run is settled only once the outbox query counts 0.
#include "support.h"

#include <catch2/catch.hpp>

using namespace itest;

namespace {

/// The final record of the first run.
nlohmann::json finalOf(const Result& r) {
  for (const auto& op : r.report["runs"][0]["history"])
    if (op["type"] == "final") return op["value"];
  return nullptr;
}

} // namespace

TEST_CASE("relay: a relay killed after its first COMMIT is replaced by r2, which drains the outbox") {
  Result r = clean({"run", "--target", testTarget("py-outbox-relay"), "--scenario", "wallet", "--crash",
                    "kill:r1:after:COMMIT#1"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.report["verdict"] == "pass");
  bool fired = false, r2 = false, r1Step = false;
  for (const auto& op : r.report["runs"][0]["history"]) {
    if (op["type"] == "fault" && op["process"] == "r1") fired = true;
    if (op["type"] == "spawn" && op["process"] == "r2") r2 = true;
    if (op["type"] == "step" && op["process"] == "r1" && op["value"]["verb"] == "COMMIT") r1Step = true;
  }
  CHECK(fired);
  CHECK(r1Step);
  CHECK(r2);
  const auto fin = finalOf(r);
  CHECK(fin["end"] == "settled");
  CHECK(fin["outbox_pending"] == 0);
}

TEST_CASE("relay: a relay that never marks its rows sent leaves the run unsettled at the deadline, counted") {
  Result r = clean({"run", "--target", testTarget("py-outbox-unsent"), "--scenario", "wallet", "--deadline", "4s"});
  INFO(r.out << r.err);
  CHECK(r.status == 2);
  CHECK(r.report["verdict"] == "unknown");
  const auto fin = finalOf(r);
  CHECK(fin["end"] == "limit");
  CHECK(fin["limit"] == "deadline");
  CHECK(fin["outbox_pending"] == 5); // the default wallet schedule's five events, each one outbox row
  CHECK(fin.value("reason", "").find("the outbox holds 5 unsent rows") != std::string::npos);
}
