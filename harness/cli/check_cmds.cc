#include "cli/cli.h"

#include "core/error.h"

#include <fmt/format.h>

#include <map>
#include <regex>

namespace idem::cli {

namespace {

/// "2" -> (2, 2), "1-3" -> (1, 3); 1 <= A <= B <= `most`.
std::pair<int, int> processRange(const std::string& text, const char* flag, const char* what, int most) {
  std::smatch m;
  static const std::regex form(R"(([0-9])(?:-([0-9]))?)");
  if (std::regex_match(text, m, form)) {
    int a = std::stoi(m[1]), b = m[2].matched ? std::stoi(m[2]) : a;
    if (a >= 1 && a <= b && b <= most) return {a, b};
  }
  throw UsageError(fmt::format("{}: '{}' is not a number of {} N or a range A-B within 1..{}", flag, text, what, most));
}

} // namespace

void addCheckCommands(CLI::App& app, Handler& handler) {
  static CommonArgs checkCommon;
  static CheckArgs checkArgs;
  static double budgetMs = 0;
  auto* check = app.add_subcommand(
      "check", "generate schedules from a seed (events, retries, reordering, kills), run them, shrink the first failure");
  addCommon(*check, checkCommon, false);
  addFaults(*check, checkCommon, "fault kinds the schedules draw, e.g. kill,forget (default for consumers: all: kill, "
                                 "drop, delay, error, forget, restart on embedded servers, and hold with two consumers or more; "
                                 "rebalance, age and pause only when named; for an HTTP scenario: kill)");
  addShard(*check, checkCommon, "schedules (by index)");
  check->add_option("--runs", checkArgs.runs, "schedules to generate and run")->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  check->add_option("--max-events", checkArgs.maxEvents, "events per schedule: 1..N")->check(CLI::Range(1, 1000))
      ->capture_default_str();
  auto units = CLI::AsNumberWithUnit(std::map<std::string, double>{{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}},
                                     CLI::AsNumberWithUnit::CASE_SENSITIVE, "DURATION");
  check->add_option("--time-budget", budgetMs, "stop searching after this long, e.g. 5m (shrinking still completes)")
      ->transform(units)->check(CLI::Range(1.0, 1e12, "DURATION > 0"));
  check->add_option("--replays", checkArgs.replays, "replays of a counterexample before it is reported; "
                                                    "a verdict that changes makes it flaky (exit 2)")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  check->add_flag("--no-class-sweep", checkArgs.noClassSweep,
                  "leave out the class sweep that opens the search (one kill at each (when, verb) of the trace): "
                  "random schedules from run 1");
  static std::string consumers = "1-2";
  check->add_option("--consumers", consumers,
                    "consumer processes at once, N or A-B (1..4): with two or more, schedules also draw holds "
                    "(hold:cN:...) and retries sent in flight, and faults name their process")
      ->capture_default_str();
  static std::string replicas = fmt::format("1-{}", kMaxReplicas);
  check->add_option("--replicas", replicas,
                    "HTTP scenarios: server replicas at once, N or A-B (1..3), shrunk toward A: requests and bursts' "
                    "copies go to replicas the schedule draws")
      ->capture_default_str();
  check->final_callback([&handler, check] {
    checkArgs.timeBudget = std::chrono::milliseconds(static_cast<int64_t>(budgetMs));
    checkArgs.scenarioGiven = check->count("--scenario") > 0;
    checkArgs.consumersGiven = check->count("--consumers") > 0;
    checkArgs.replicasGiven = check->count("--replicas") > 0;
    handler = [] {
      // Read here, not while parsing: a bad range is a usage error (one line, exit 2).
      auto range = processRange(consumers, "--consumers", "consumers", kMaxConsumers);
      auto rs = processRange(replicas, "--replicas", "replicas", kMaxReplicas);
      checkArgs.minConsumers = range.first;
      checkArgs.maxConsumers = range.second;
      checkArgs.minReplicas = rs.first;
      checkArgs.maxReplicas = rs.second;
      return checkCommand(finish(checkCommon), checkArgs);
    };
  });

  static CommonArgs replayCommon;
  static ReplayArgs replayArgs;
  auto* replay = app.add_subcommand("replay", "run a schedule file (e.g. a check's counterexample.json) and judge it");
  replay->add_option("file", replayArgs.file, "schedule file (JSON)")->required();
  addCommon(*replay, replayCommon, false);
  replay->get_option("--target")->required(false)->description("target folder (default: the file's \"target\")");
  replay->get_option("--scenario")->description("scenario name or file (default: the file's \"scenario\")");
  replay->add_option("--replays", replayArgs.replays, "run it N times; verdicts that differ make it flaky (exit 2)")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  replay->final_callback([&handler, replay] {
    replayArgs.scenarioGiven = replay->count("--scenario") > 0;
    handler = [] { return replayCommand(finish(replayCommon), replayArgs); };
  });
}

} // namespace idem::cli
