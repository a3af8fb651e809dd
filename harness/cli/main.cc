/// idemproof: the command line. Every judging command takes the same target, scenario, server and
/// report flags; exit status 0 pass, 1 fail, 2 cannot be judged (bad input, server or target that
/// cannot start, unknown result).
#include "core/error.h"
#include "core/process.h"
#include "driver/commands.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <array>
#include <functional>
#include <map>
#include <iostream>

namespace {

using namespace idem;

/// Durations as parsed by CLI11, per command's args, in milliseconds: deadline, stall, grace.
std::map<const CommonArgs*, std::array<double, 3>>& durations() {
  static std::map<const CommonArgs*, std::array<double, 3>> d;
  return d;
}

/// Adds the flags every judging command shares.
void addCommon(CLI::App& cmd, CommonArgs& a, bool manyTargets) {
  if (manyTargets)
    cmd.add_option("--target", a.targets, "target folder holding target.json (repeat for several)")->required();
  else
    cmd.add_option("--target", a.targets, "target folder holding target.json")->required()->expected(1);
  cmd.add_option("--scenario", a.scenario, "scenario name (scenarios/NAME.json) or a scenario file")
      ->capture_default_str();
  cmd.add_option("--report", a.reportDir, "report directory (default reports/latest)");
  cmd.add_option("--database-url", a.databaseUrl, "use this PostgreSQL (libpq URI) instead of an embedded one");
  cmd.add_option("--valkey-url", a.valkeyUrl, "use this Valkey/Redis (redis://host:port/db) instead of an embedded one");
  cmd.add_option("--seed", a.seed, "seed of generated schedules")->each([&a](const std::string&) { a.seedGiven = true; });
  cmd.add_option("--workers", a.workers, "schedules run in parallel (default: min(2, cores); 1 with external servers)")
      ->check(CLI::Range(1, 16));
  cmd.add_option("--claim-idle-ms", a.run.claim_idle_ms, "CLAIM_IDLE_MS given to consumers")
      ->check(CLI::Range(1, 600000))->capture_default_str();
  auto units = CLI::AsNumberWithUnit(std::map<std::string, double>{{"ms", 1}, {"s", 1000}, {"m", 60000}},
                                     CLI::AsNumberWithUnit::CASE_SENSITIVE, "DURATION");
  auto& d = durations()[&a];
  d = {double(a.run.deadline.count()), double(a.run.stall.count()), double(a.run.grace.count())};
  cmd.add_option("--deadline", d[0], "wall-clock limit of one schedule (e.g. 60s)")->transform(units)->capture_default_str();
  cmd.add_option("--stall-timeout", d[1], "no broker progress for this long: restart the consumer once, then stop as stuck")
      ->transform(units)->capture_default_str();
  cmd.add_option("--grace", d[2], "SIGTERM to SIGKILL grace period of a consumer")->transform(units)->capture_default_str();
}

/// Moves the parsed durations into the run options (CLI11 gives numbers in ms).
CommonArgs& finish(CommonArgs& a) {
  const auto& d = durations()[&a];
  a.run.deadline = std::chrono::milliseconds(static_cast<int64_t>(d[0]));
  a.run.stall = std::chrono::milliseconds(static_cast<int64_t>(d[1]));
  a.run.grace = std::chrono::milliseconds(static_cast<int64_t>(d[2]));
  return a;
}

} // namespace

int main(int argc, char** argv) {
  Cleanup::installSignalHandlers();
  CLI::App app{"idemproof: proves a message consumer idempotent under crashes, retries and reordering, "
               "or finds the schedule that breaks it"};
  app.require_subcommand(1);
  std::function<int()> handler;

  CommonArgs runCommon;
  RunArgs runArgs;
  auto* run = app.add_subcommand("run", "run one schedule (the scenario's default, or --events N) and judge it");
  addCommon(*run, runCommon, false);
  run->add_option("--events", runArgs.events, "generate N events (with --seed) instead of the default schedule")
      ->check(CLI::Range(1, 10000));
  run->add_option("--crash", runArgs.crashes, "kill point before:VERB#k or after:VERB#k (repeatable)");
  run->add_option("--restart", runArgs.restart, "how a killed consumer restarts: new-name or same-name")
      ->check(CLI::IsMember({"new-name", "same-name"}))->capture_default_str();
  run->final_callback([&] { handler = [&] { return runCommand(finish(runCommon), runArgs); }; });

  CommonArgs sweepCommon;
  auto* sweep = app.add_subcommand("sweep", "kill the consumer before and after every step of the default schedule");
  addCommon(*sweep, sweepCommon, false);
  sweep->final_callback([&] { handler = [&] { return sweepCommand(finish(sweepCommon)); }; });

  int rc = 2;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "idemproof: " << e.what() << " (see idemproof --help)\n";
    Cleanup::instance().runAll();
    return 2;
  }
  try {
    rc = handler ? handler() : 2;
  } catch (const UsageError& e) {
    std::cerr << "idemproof: " << e.what() << "\n";
    rc = 2;
  } catch (const std::exception& e) {
    std::cerr << "idemproof: internal error: " << e.what() << "\n";
    rc = 2;
  }
  Cleanup::instance().runAll();
  return rc;
}
