#include "cli/cli.h"

#include "core/error.h"
#include "plan/fault_kind.h"
#include "search/shard.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <map>

namespace idem::cli {

namespace {

/// Durations as parsed by CLI11, per command's args, in milliseconds: deadline, stall, grace, settle,
/// start timeout.
std::map<const CommonArgs*, std::array<double, 5>>& durations() {
  static std::map<const CommonArgs*, std::array<double, 5>> d;
  return d;
}

} // namespace

void addSeed(CLI::App& cmd, CommonArgs& a) {
  cmd.add_option_function<std::string>(
         "--seed",
         [&a](const std::string& v) {
           uint64_t seed = 0;
           auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seed);
           if (v.empty() || ec != std::errc() || end != v.data() + v.size())
             throw CLI::ValidationError("--seed", "'" + v + "' is not a whole number from 0 to 18446744073709551615");
           a.seed = seed;
           a.seedGiven = true;
         },
         "seed of generated schedules, 0 to 2^64-1")
      ->type_name("UINT64");
}

void addShard(CLI::App& cmd, CommonArgs& a, const std::string& what) {
  cmd.add_option_function<std::string>(
         "--shard",
         [&a](const std::string& v) {
           try {
             a.shard = parseShard(v, [](const std::string& name) -> std::optional<std::string> {
               const char* value = std::getenv(name.c_str());
               return value ? std::optional<std::string>(value) : std::nullopt;
             });
           } catch (const UsageError& e) {
             throw CLI::ValidationError(e.what());
           }
         },
         "run shard I of N (0-based): the " + what + " i with i % N == I; auto/N takes I from JOB_COMPLETION_INDEX "
         "(Kubernetes) or CI_NODE_INDEX (GitLab, 1-based); `idemproof merge` joins the shards' reports")
      ->type_name("I/N");
}

void addSinkPolicy(CLI::App& cmd, CommonArgs& a) {
  cmd.add_option("--sink-policy", a.sinkPolicy,
                 "the sink's policy for idempotency keys, over the scenario's: honour (a key's first answer is "
                 "replayed) or ignore (every call executes); a scenario with a sink only")
      ->check(CLI::IsMember({"honour", "ignore"}))
      ->type_name("honour|ignore");
}

void addOutputs(CLI::App& cmd, CommonArgs& a) {
  cmd.add_option("--report", a.reportDir, "report directory (default reports/latest)")
      ->each([&a](const std::string&) { a.reportDirGiven = true; });
  cmd.add_option("--junit", a.junit, "also write JUnit XML to FILE")
      ->each([&a](const std::string&) { a.junitGiven = true; });
}

void addCommon(CLI::App& cmd, CommonArgs& a, bool manyTargets) {
  if (manyTargets)
    cmd.add_option("--target", a.targets, "target folder holding target.json (repeat for several)")->required();
  else
    cmd.add_option("--target", a.targets, "target folder holding target.json")->required()->expected(1);
  cmd.add_option("--scenario", a.scenario,
                 "scenario name (scenarios/NAME.json) or a scenario file (default: the first scenario the target "
                 "lists, in every target given)")
      ->each([&a](const std::string&) { a.scenarioGiven = true; });
  addOutputs(cmd, a);
  cmd.add_option("--database-url", a.databaseUrl, "use this PostgreSQL (libpq URI) instead of an embedded one");
  cmd.add_option("--valkey-url", a.valkeyUrl, "use this Valkey/Redis (redis://host:port/db) instead of an embedded one");
  // The user's brokers: each workspace's queues or streams are named apart there, and go when it goes.
  cmd.add_option_function<std::string>(
      "--amqp-url", [&a](const std::string& url) { a.brokerUrls["rabbitmq"] = url; },
      "use this RabbitMQ (amqp://user:password@host:port/vhost) instead of an embedded one");
  cmd.add_option_function<std::string>(
      "--nats-url", [&a](const std::string& url) { a.brokerUrls["nats"] = url; },
      "use this NATS server with JetStream (nats://[token@]host:port) instead of an embedded one");
  addSeed(cmd, a);
  cmd.add_option("--workers", a.workers, "schedules run in parallel (default: the cores, at most 16; 1 with external servers)")
      ->check(CLI::Range(1, 16));
  cmd.add_option("--claim-idle-ms", a.run.claim_idle_ms, "CLAIM_IDLE_MS given to consumers; a killed one's replacement has its requests held this long after the kill")
      ->check(CLI::Range(1, 600000))->capture_default_str();
  cmd.add_flag("--scenario-values", a.scenarioValues,
               "run the scenario's default schedule with its own values, not decodable ones: a pass that another "
               "combination of applications also explains is then unknown (docs/verdicts.md)");
  auto units = CLI::AsNumberWithUnit(std::map<std::string, double>{{"ms", 1}, {"s", 1000}, {"m", 60000}},
                                     CLI::AsNumberWithUnit::CASE_SENSITIVE, "DURATION");
  auto& d = durations()[&a];
  const auto& r = a.run;
  d = {double(r.deadline.count()), double(r.stall.count()), double(r.grace.count()), double(r.settle.count()),
       double(r.start_timeout.count())};
  auto positive = CLI::Range(1.0, 1e12, "DURATION > 0");
  auto duration = [&](const char* flag, double& v, const char* help) {
    cmd.add_option(flag, v, help)->transform(units)->check(positive)->capture_default_str();
  };
  duration("--deadline", d[0], "wall-clock limit of one schedule (bounds every wait); a consumer still busy then makes "
                               "the run unknown, e.g. 120s");
  // A bare number is milliseconds: `--deadline 45` meant as seconds would end every run before its consumer
  // could start, and every run would be unknown for it.
  cmd.get_option("--deadline")->check(CLI::Validator(
      [](std::string& v) {
        return std::stod(v) < 1000 ? fmt::format("{0} ms is shorter than any run (a number without a unit is "
                                                 "milliseconds: {0}s is {0} seconds); give 1s or more", v)
                                   : std::string();
      },
      "DURATION >= 1s"));
  duration("--stall-timeout", d[1], "work left while every consumer is idle for CLAIM_IDLE_MS + this: restart once, "
                                    "then stuck");
  duration("--grace", d[2], "SIGTERM to SIGKILL grace period of a consumer");
  duration("--settle", d[3], "everything acknowledged and every consumer idle: end the run after this long without work (at once when every consumer is parked in a blocking read)");
  duration("--start-timeout", d[4], "a consumer that makes no request for this long after it started: unknown");
  addSinkPolicy(cmd, a);
  cmd.add_option("--max-processes", a.run.max_processes, "consumer processes one schedule may start (restarts included)")
      ->check(CLI::Range(1, 1000))->capture_default_str();
}

void addFaults(CLI::App& cmd, CommonArgs& a, const std::string& help) {
  // Split here, not by CLI11's delimiter, which drops empty items: "kill,,drop" is a typing error, and a
  // kind named twice would run every point twice.
  cmd.add_option_function<std::vector<std::string>>(
         "--faults",
         [&a](const std::vector<std::string>& values) {
           const auto& known = stepFaultKinds();
           for (const auto& v : values) {
             size_t from = 0;
             while (true) {
               size_t comma = v.find(',', from);
               std::string kind = v.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
               if (kind.empty())
                 throw CLI::ValidationError("--faults", "'" + v + "' has an empty kind (write KIND,KIND,...)");
               if (std::find(known.begin(), known.end(), kind) == known.end()) {
                 std::string list;
                 for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
                 throw CLI::ValidationError("--faults", "'" + kind + "' is not a fault kind (" + list + ")");
               }
               if (std::find(a.faults.begin(), a.faults.end(), kind) != a.faults.end())
                 throw CLI::ValidationError("--faults", "'" + kind + "' is named twice");
               a.faults.push_back(kind);
               if (comma == std::string::npos) break;
               from = comma + 1;
             }
           }
         },
         help)
      ->type_name("KIND,...");
}

CommonArgs& finish(CommonArgs& a) {
  if (!a.scenarioGiven) a.scenario = defaultScenario(a.targets);
  const auto& d = durations()[&a];
  a.run.deadline = std::chrono::milliseconds(static_cast<int64_t>(d[0]));
  a.run.stall = std::chrono::milliseconds(static_cast<int64_t>(d[1]));
  a.run.grace = std::chrono::milliseconds(static_cast<int64_t>(d[2]));
  a.run.settle = std::chrono::milliseconds(static_cast<int64_t>(d[3]));
  a.run.start_timeout = std::chrono::milliseconds(static_cast<int64_t>(d[4]));
  return a;
}

} // namespace idem::cli
