/// `idemproof run` end to end on embedded servers: the wallet scenario against the reference targets, a
/// consumer in another language, and misbehaving targets. After each run: no process of the run is
/// left and no temp dir.
#include "support.h"

#include <boost/process.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

using namespace itest;
namespace bp = boost::process;

TEST_CASE("simple fails the default wallet schedule with event 2 applied twice") {
  Result r = clean({"run", "--target", target("simple"), "--scenario", "wallet"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  REQUIRE(r.report["verdict"] == "fail");
  auto dups = violations(r.report, "duplicate");
  REQUIRE(dups.size() == 1);
  CHECK(dups[0]["key"] == "w1");
  // Decodable amounts (docs/verdicts.md): 100, 200, 400, 800 for events 1, 3, 4, 5 and 1600 on top for the
  // retried event 2, which may be delivered twice.
  CHECK(dups[0]["expected"] == 3100);
  CHECK(dups[0]["observed"] == 4700);
  CHECK(dups[0]["events"] == nlohmann::json::array({2}));
  CHECK(dups[0]["message"].get<std::string>().find("event 2 applied twice") != std::string::npos);
  REQUIRE(r.report["processes"].size() >= 1);
  CHECK(r.report["processes"][0]["name"] == "c1");
  CHECK(!r.report["processes"][0]["log"].is_null());
}

TEST_CASE("dedup-table and dedup-valkey pass the default wallet schedule") {
  for (const char* t : {"dedup-table", "dedup-valkey"}) {
    Result r = clean({"run", "--target", target(t), "--scenario", "wallet"});
    INFO(t << ": " << r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.report["verdict"] == "pass");
    CHECK(r.report["violations"].empty());
  }
}

TEST_CASE("a Python consumer (psycopg 3, redis-py) passes through the same contract") {
  Result r = clean({"run", "--target", testTarget("py-dedup-table"), "--scenario", "wallet"});
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK(r.report["verdict"] == "pass");
}

TEST_CASE("a kill after SET NX and before the commit loses payment 3 in dedup-valkey") {
  Result r = clean({"run", "--target", target("dedup-valkey"), "--scenario", "wallet", "--crash", "after:SET#3"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  auto lost = violations(r.report, "lost");
  REQUIRE(lost.size() == 1);
  CHECK(lost[0]["expected"] == 12100); // 100, 300, 900, 2700 and 8100 for the retried event 2 (one kill)
  CHECK(lost[0]["observed"] == 11800);
  CHECK(lost[0]["events"] == nlohmann::json::array({3}));
  CHECK(lost[0]["kill_point"] == "after:SET#3");
  // The terminal names the mistake under the violation, as the page does.
  CHECK(r.out.find("\n    pattern: dedup mark outside the effect's transaction — write the mark in the effect's "
                   "transaction") != std::string::npos);
}

TEST_CASE("a kill point that never fires makes the run unknown, not a pass") {
  Result r = clean({"run", "--target", target("dedup-table"), "--scenario", "wallet", "--crash", "after:COMMIT#99"});
  INFO(r.out << r.err);
  CHECK(r.status == 2);
  CHECK(r.report["verdict"] == "unknown");
}

TEST_CASE("misbehaving targets give exit 2 or a clear violation, never a pass or a hang") {
  SECTION("no manifest") {
    Result r = clean({"run", "--target", testTarget("no-manifest"), "--scenario", "wallet"});
    CHECK(r.status == 2);
    CHECK(r.err.find("target.json") != std::string::npos);
  }
  SECTION("a field of the wrong type") {
    Result r = clean({"run", "--target", testTarget("bad-type"), "--scenario", "wallet"});
    CHECK(r.status == 2);
    CHECK(r.err.find("command") != std::string::npos);
  }
  SECTION("a command that does not exist") {
    Result r = clean({"run", "--target", testTarget("missing-command"), "--scenario", "wallet"});
    CHECK(r.status == 2);
    CHECK(r.err.find("does-not-exist") != std::string::npos);
  }
  SECTION("a target that exits 1 at once") {
    Result r = clean({"run", "--target", testTarget("exits-1"), "--scenario", "wallet"});
    CHECK(r.status == 2);
    CHECK(r.err.find("exit 1") != std::string::npos);
  }
  SECTION("a target that hangs and ignores SIGTERM") {
    Result r = clean({"run", "--target", testTarget("hangs"), "--scenario", "wallet", "--start-timeout", "1s",
                      "--grace", "200ms"});
    CHECK(r.status == 2);
    CHECK(r.report["verdict"] == "unknown");
    CHECK(r.err.find("made no request") != std::string::npos);
  }
  SECTION("a target that skips a duplicate without acknowledging it") {
    Result r = clean({"run", "--target", testTarget("skip-no-ack"), "--scenario", "wallet", "--stall-timeout", "1s"});
    CHECK(r.status == 1);
    auto stuck = violations(r.report, "stuck");
    REQUIRE(stuck.size() == 1);
    CHECK(stuck[0]["events"] == nlohmann::json::array({2}));
  }
  SECTION("a scenario the target does not implement") {
    Result r = clean({"run", "--target", target("simple"), "--scenario", "customer-city"});
    CHECK(r.status == 2);
    CHECK(r.err.find("does not implement") != std::string::npos);
  }
}

TEST_CASE("SIGINT in the middle of a run leaves no process and no temp dir") {
  Result r = clean({"run", "--target", testTarget("hangs"), "--scenario", "wallet", "--stall-timeout", "30s"}, 1500);
  CHECK(r.status == 130);
}

TEST_CASE("stdout to a reader that went away: the run goes on, writes its report and exits with its verdict") {
  const auto dir = freshTmpRoot("epipe-" + std::to_string(::getpid()));
  const std::string tag = "epipe-" + std::to_string(::getpid());
  bp::environment env = boost::this_process::environment();
  env["IDEMPROOF_TEST_TAG"] = tag;
  env["IDEMPROOF_TMPDIR"] = dir.string();
  bp::pipe out;
  bp::child c((build() / "idemproof").string(),
              bp::args({"run", "--target", target("dedup-table"), "--scenario", "wallet", "--report", (dir / "report").string()}),
              bp::std_out > out, bp::std_err > bp::null, bp::std_in < bp::null, env, bp::start_dir(repo().string()));
  out.close(); // the reader is gone before idemproof prints anything
  c.wait();
  CHECK(c.exit_code() == 0); // not killed by SIGPIPE: the run's own verdict, a pass
  CHECK(std::filesystem::exists(dir / "report" / "report.json"));
  CHECK(leftovers(tag).empty());
  CHECK(tempDirsIn(dir).empty());
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST_CASE("run: without --scenario, the first scenario the target lists") {
  // versioned-guard lists customer-city alone: asking for wallet by default would only be an error.
  Result r = clean({"run", "--target", target("versioned-guard")});
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK(r.report["scenario"] == "customer-city");
  // Two targets with no scenario in common: the error names what each lists.
  Result none = clean({"compare", "--target", target("versioned-guard"), "--target", target("simple")});
  CHECK(none.status == 2);
  CHECK(none.err.find("does not implement scenario") != std::string::npos);
}
