#include "cli/cli.h"

#include <array>
#include <map>

namespace idem::cli {

namespace {

/// Durations as parsed by CLI11, per command's args, in milliseconds: deadline, stall, grace.
std::map<const CommonArgs*, std::array<double, 3>>& durations() {
  static std::map<const CommonArgs*, std::array<double, 3>> d;
  return d;
}

} // namespace

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
  cmd.add_option("--claim-idle-ms", a.run.claim_idle_ms, "CLAIM_IDLE_MS given to consumers, waited after a kill")
      ->check(CLI::Range(1, 600000))->capture_default_str();
  cmd.add_option("--junit", a.junit, "also write JUnit XML to FILE");
  auto units = CLI::AsNumberWithUnit(std::map<std::string, double>{{"ms", 1}, {"s", 1000}, {"m", 60000}},
                                     CLI::AsNumberWithUnit::CASE_SENSITIVE, "DURATION");
  auto& d = durations()[&a];
  d = {double(a.run.deadline.count()), double(a.run.stall.count()), double(a.run.grace.count())};
  cmd.add_option("--deadline", d[0], "wall-clock limit of one schedule, e.g. 60s")->transform(units)->capture_default_str();
  cmd.add_option("--stall-timeout", d[1], "no broker progress for this long: restart the consumer once, then stop (stuck)")
      ->transform(units)->capture_default_str();
  cmd.add_option("--grace", d[2], "SIGTERM to SIGKILL grace period of a consumer")->transform(units)->capture_default_str();
}

CommonArgs& finish(CommonArgs& a) {
  const auto& d = durations()[&a];
  a.run.deadline = std::chrono::milliseconds(static_cast<int64_t>(d[0]));
  a.run.stall = std::chrono::milliseconds(static_cast<int64_t>(d[1]));
  a.run.grace = std::chrono::milliseconds(static_cast<int64_t>(d[2]));
  return a;
}

} // namespace idem::cli
