/// idemproof replay FILE: a schedule file (plan/schedule.h, e.g. a check's counterexample.json) run
/// `--replays N` times (default once) and judged like `run`. The target and scenario come from the file
/// unless given on the command line. Replays that disagree make the verdict "flaky" (exit 2).
#include "driver/check.h"

#include "core/cleanup.h"
#include "core/error.h"
#include "core/json_file.h"
#include "supervisor/broker_registry.h"

#include <fmt/format.h>

#include <fstream>
#include <iostream>

namespace idem {

namespace {

/// A schedule file as a user hands it over: well formed (scheduleFromJson), and every process its faults name
/// one that a run of it can start.
Schedule loadSchedule(const std::string& file) {
  Schedule s = scheduleFromJson(readJsonFile(file, file), file);
  checkFaultProcesses(s, [&](size_t i) { return fmt::format("{}: field 'faults[{}]'", file, i); });
  return s;
}

} // namespace

int replayCommand(const CommonArgs& commonIn, const ReplayArgs& args) {
  auto t0 = std::chrono::steady_clock::now();
  Schedule s = loadSchedule(args.file);
  CommonArgs common = commonIn;
  if (common.targets.empty()) {
    if (s.target.empty()) throw UsageError(fmt::format("{}: field 'target' is empty: pass --target DIR", args.file));
    common.targets = {s.target};
  }
  if (!args.scenarioGiven) common.scenario = s.scenario;
  if (!common.seedGiven) common.seed = s.seed;
  common.ownServers = restartsServers(s.faults);
  // The schedule must fit the scenario before any server starts.
  Session session(common, [&](const Scenario& sc, const std::vector<Target>& targets) {
    for (const auto& t : targets)
      for (size_t i = 0; i < s.faults.size(); ++i)
        requireFaultOnTarget(s.faults[i], t, fmt::format("{}: field 'faults[{}]'", args.file, i));
    if (sc.name != s.scenario)
      throw UsageError(fmt::format("{}: field 'scenario': the schedule is for scenario '{}', not '{}'", args.file,
                                   s.scenario, sc.name));
    try {
      completeEvents(sc, s.events);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("{}: field 'events': {}", args.file, e.what()));
    }
    checkClientOps(sc, s.client, args.file, "client");
    if (!s.sinkPolicy.empty() && !sc.sink)
      throw UsageError(fmt::format("{}: field 'sink_policy': scenario '{}' has no sink", args.file, sc.name));
  });
  if (!common.sinkPolicy.empty()) s.sinkPolicy = common.sinkPolicy; // the flag over the file's
  const auto& sc = session.scenario();
  const auto& target = session.targets().front();
  s.target = target.name;

  int n = std::max(1, args.replays);
  WorkerPool pool(session, std::min(session.workers(), n));
  auto js = pool.judgeAll(std::vector<Schedule>(static_cast<size_t>(n), s), true);
  if (Cleanup::interrupted()) return 2; // spoiled by the clean-up, as an interrupted run (run.cc)
  Cleanup::ExitHold hold;               // a signal from here on: the report and the summary are out first
  std::vector<std::string> verdicts;
  Verdict verdict = js.front().verdict;
  for (const auto& j : js) {
    verdicts.push_back(toString(j.verdict));
    if (j.verdict != verdict) verdict = Verdict::Flaky;
  }
  ReportBuilder report(session.header("replay"));
  for (size_t i = 0; i < js.size(); ++i) {
    if (i == 0 || js[i].verdict != js.front().verdict)
      report.addRun(session.record(js[i], js.size() == 1 ? "replay" : fmt::format("replay-{}", i + 1), target.name));
  }
  report.verdict(verdict);
  report.error(js.front().error);
  report.schedule(s);
  report.section("replay", {{"file", args.file}, {"replays", n}, {"verdicts", verdicts}});
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  report.timings({{"total_ms", ms}, {"schedules", n}});
  std::string path = report.write(session.reportDir().string(), common.junit);

  std::cout << fmt::format("{} × {}: {} — {}\n", target.name, sc.name, toString(verdict), s.summary());
  std::cout << describeSchedule(s, sc, "  ");
  if (n > 1) std::cout << "  replays: " << joinWords(verdicts) << "\n";
  if (!js.front().error.empty())
    std::cerr << errorLine(js.front().error, report.runs().front().logs, session.reportDir()) << "\n";
  js.front().results = report.runs().front().results; // with log paths in the report folder
  printResults(js.front(), "  ");
  std::cout << "report: " << path << "\n";
  return exitStatus(verdict);
}

} // namespace idem
