/// idemproof run: one schedule (the scenario's default, or --events N generated), with --crash faults,
/// judged; report.json with its run, history and logs.
#include "driver/commands.h"

#include "core/cleanup.h"
#include "core/error.h"

#include "driver/pool.h"
#include "plan/fault_kind.h"
#include "scenario/decodable.h"
#include "supervisor/broker_registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

namespace idem {

int runCommand(const CommonArgs& common, const RunArgs& args) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Fault> faults; // flags are checked before any server starts
  for (const auto& c : args.crashes) faults.push_back(Fault::parse(c, "--crash"));
  RestartStyle restart = restartStyleFromString(args.restart, "--restart");
  CommonArgs withServers = common;
  withServers.ownServers = restartsServers(faults);
  // The processes the faults name, checked before any server starts: server labels (sN) are an HTTP run's.
  auto checkProcesses = [&](bool http) {
    Schedule planned;
    planned.consumers = args.consumers;
    planned.replicas = args.replicas;
    if (http) planned.client.emplace_back();
    planned.faults = faults;
    checkFaultProcesses(planned, [&](size_t i) { return fmt::format("--crash {}", args.crashes[i]); });
  };
  const bool serverLabels = std::any_of(faults.begin(), faults.end(), [](const Fault& f) {
    return isServerLabel(f.process) || (!faultKind(f.kind, "fault").effect(f).until.empty() && isServerLabel(f.args[0]));
  });
  if (!serverLabels) checkProcesses(false);
  Session session(withServers, [&](const Scenario& sc, const std::vector<Target>& targets) {
    for (const auto& t : targets)
      for (size_t i = 0; i < faults.size(); ++i) requireFaultOnTarget(faults[i], t, "--crash " + args.crashes[i]);
    if (!sc.http) {
      if (args.replicas != 1)
        throw UsageError(fmt::format("--replicas: scenario {} is a consumer one: it runs --consumers, not server replicas",
                                     sc.name));
      checkProcesses(false); // a server label (sN) names no process of a consumer run
      return;
    }
    refuseEventsForHttp(sc, args.events);
    for (size_t i = 0; i < faults.size(); ++i) requireHttpFault(faults[i], "--crash", args.replicas);
    if (args.consumers != 1)
      throw UsageError(fmt::format("--consumers: scenario {} is an HTTP one: it runs server replicas (--replicas), not "
                                   "consumers", sc.name));
    checkProcesses(true);
  });
  const auto& sc = session.scenario();
  const auto& target = session.targets().front();
  Schedule s = args.events > 0 ? generatedSchedule(sc, args.events, common.seed) : defaultScheduleFor(session, target.name, 0);
  s.seed = common.seed;
  s.target = target.name;
  s.faults = faults;
  s.restart = restart;
  s.consumers = args.consumers;
  if (sc.http) s.replicas = args.replicas;
  if (args.events > 0 || !common.scenarioValues) s.values = makeDecodable(sc, s, applicationWeight(s.faults));

  WorkerPool pool(session, 1);
  Judged j = pool.judge(0, 0, s, true);
  // Interrupted during the run: the clean-up took its servers and processes, so what it saw says nothing of
  // the target. No report (docs/commands.md); main waits for the signal thread's exit (128 + the signal).
  if (Cleanup::interrupted()) return 2;
  Cleanup::ExitHold hold; // a signal from here on: the report and the summary are out before the exit
  ReportBuilder report(session.header("run"));
  report.verdict(j.verdict);
  report.error(j.error);
  report.schedule(s);
  report.addRun(session.record(j, "run", target.name));
  j.results = report.runs().front().results; // with log paths in the report folder
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  report.timings({{"total_ms", ms}, {"schedules", 1}});
  std::string path = report.write(session.reportDir().string(), common.junit);

  std::cout << fmt::format("{} × {}: {} — {}\n", target.name, sc.name, toString(j.verdict), s.summary());
  if (!j.error.empty()) std::cerr << errorLine(j.error, report.runs().front().logs, session.reportDir()) << "\n";
  if (j.verdict == Verdict::Unknown) { // one line on stderr: why it can't be judged
    for (const auto& c : j.results)
      if (c.verdict == Verdict::Unknown && !c.error.empty()) {
        std::cerr << "idemproof: unknown: " << c.checker << ": " << c.error << "\n";
        break;
      }
  }
  printResults(j, "  ");
  std::cout << "report: " << path << "\n";
  return exitStatus(j.verdict);
}

} // namespace idem
