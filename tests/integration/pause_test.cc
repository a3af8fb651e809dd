/// The pause fault (plan/faults/pause.cc): a consumer's process group stopped (SIGSTOP) at a step while the
/// broker hands what it holds to another consumer, then woken (SIGCONT). Each case runs its commands at
/// once (cleanAll), each well under a second of schedule.
#include "support.h"

#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <sstream>

using namespace itest;

namespace {

/// The pause's stop (its fault op, SIGSTOP) and wake (its release note) on process `process` of run 0.
struct PauseOps {
  bool stopped = false;
  std::string released; ///< the release note's reason, "" when none
};

PauseOps pauseOps(const Result& r, const std::string& fault, const std::string& process = "c1") {
  PauseOps out;
  const std::string prefix = "pause " + fault + " released: ";
  for (const auto& op : r.report["runs"][0]["history"]) {
    if (op["process"] != process) continue;
    const auto& v = op["value"];
    if (op["type"] == "fault" && v["fault"] == fault) out.stopped = v.value("signal", 0) == SIGSTOP;
    if (op["type"] == "note" && v["message"].get<std::string>().rfind(prefix, 0) == 0)
      out.released = v["message"].get<std::string>().substr(prefix.size());
  }
  return out;
}

} // namespace

TEST_CASE("pause: woken after c2 claimed its entry, zombie-no-fence applies it twice and dedup-table once", "[two-cores]") {
  const std::string fault = "pause:before:COMMIT#1";
  // The look-first consumers get a claim time of 1 s (Python: 2 s): at the default 20 ms a consumer slowed by
  // a loaded machine has its entry claimed while it is still working, before the pause (claim while busy, a
  // check-then-act), and the zombie this test is about would not be the first duplicate.
  auto rs = cleanAll({{"run", "--target", target("zombie-no-fence"), "--consumers", "2", "--crash", fault,
                       "--claim-idle-ms", "1000"},
                      {"run", "--target", target("dedup-table"), "--consumers", "2", "--crash", fault},
                      {"run", "--target", target("zombie-no-fence"), "--crash", fault},
                      // The same in Python: a look-first consumer (psycopg, redis-py) and the dedup table.
                      // Paused up to 5 s: longer than the claim time, and c2, a Python process, may take a while
                      // to start and claim; the pause ends as soon as c2 waits on c1's row lock.
                      {"run", "--target", testTarget("py-check-then-act"), "--consumers", "2", "--crash", fault + ":5000",
                       "--claim-idle-ms", "2000"},
                      {"run", "--target", testTarget("py-dedup-table"), "--consumers", "2", "--crash", fault + ":2000"}});
  const Result& zombie = rs[0];
  const Result& fenced = rs[1];
  const Result& alone = rs[2];
  {
    INFO(zombie.out << zombie.err);
    REQUIRE(zombie.status == 1);
    auto dup = onlyViolation(zombie, "duplicate");
    // Event 1, which c1 was paused on; awake, c1 also works on the rest of its batch, which c2 claimed too:
    // some of those may be applied twice as well, as the two interleave.
    REQUIRE(!dup["events"].empty());
    CHECK(dup["events"][0] == 1);
    const std::string message = dup["message"];
    CHECK(message.find("c1 paused at pause:before:COMMIT#1") != std::string::npos);
    CHECK(dup["pattern"]["id"] == "paused-member-works");
    // c2's credit waits on c1's row lock: that wakes c1, which commits first.
    auto ops = pauseOps(zombie, fault);
    CHECK(ops.stopped);
    CHECK(ops.released.find("waits on a PostgreSQL lock") != std::string::npos);
    // The timeline draws the pause as a span, from its stop to its wake.
    std::ifstream html(zombie.reportDir / "report.html");
    std::stringstream text;
    text << html.rdbuf();
    CHECK(text.str().find("c1 paused (SIGSTOP) at pause:before:COMMIT#1") != std::string::npos);
    CHECK(text.str().find("c1 woken (SIGCONT) from pause:before:COMMIT#1") != std::string::npos);
    CHECK(text.str().find("class=\"held paused\"") != std::string::npos);
  }
  {
    INFO("Python: " << rs[3].out << rs[3].err << rs[4].out << rs[4].err);
    CHECK(rs[3].status == 1);
    CHECK(onlyViolation(rs[3], "duplicate")["pattern"]["id"] == "paused-member-works");
    CHECK(rs[4].status == 0);
  }
  {
    INFO(fenced.out << fenced.err);
    CHECK(fenced.status == 0);
    // The run's first COMMIT may be c2's (both start at once): the pause stops whichever made it.
    auto ops = pauseOps(fenced, fault);
    if (!ops.stopped) ops = pauseOps(fenced, fault, "c2");
    CHECK(ops.stopped);
    CHECK(!ops.released.empty());
  }
  {
    // Alone, the pause lasts the broker's hand-over time, and a consumer that finds its entry still its own
    // is right.
    INFO(alone.out << alone.err);
    CHECK(alone.status == 0);
    auto ops = pauseOps(alone, fault);
    CHECK(ops.stopped);
    CHECK(ops.released == "500 ms passed");
  }
}

TEST_CASE("pause: on NATS the paused consumer's AckWait runs out while it sleeps, and dedup-table passes") {
  // AckWait is CLAIM_IDLE_MS (20 ms): the message c1 committed and has not acknowledged is the durable's to
  // deliver again while c1 is stopped; c1 wakes after the broker's hand-over time and acknowledges late.
  const std::string fault = "pause:after:COMMIT#1";
  Result r = clean({"run", "--target", target("nats-dedup-table"), "--consumers", "2", "--crash", fault});
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  auto ops = pauseOps(r, fault);
  CHECK(ops.stopped);
  CHECK(ops.released == "500 ms passed");
  // Woken before the end: each process exits on its SIGTERM, none needed the SIGKILL.
  for (const auto& op : r.report["runs"][0]["history"])
    if (op["type"] == "exit") CHECK(op["value"].value("ignored_sigterm", false) == false);
}
