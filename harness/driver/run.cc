#include "driver/commands.h"

#include "report/junit.h"
#include "scenario/decodable.h"
#include "report/report.h"

#include <fmt/format.h>

#include <iostream>

namespace idem {

int runCommand(const CommonArgs& common, const RunArgs& args) {
  auto t0 = std::chrono::steady_clock::now();
  Session session(common);
  const auto& sc = session.scenario();
  const auto& target = session.targets().front();
  Schedule s = args.events > 0 ? generatedSchedule(sc, args.events, common.seed) : defaultScheduleFor(session, target.name, 0);
  s.seed = common.seed;
  s.target = target.name;
  for (const auto& c : args.crashes) s.faults.push_back(Fault::parse(c, "--crash"));
  if (args.events > 0 || !common.scenarioValues) s.values = makeDecodable(sc, s, static_cast<int>(s.faults.size()));
  s.restart = restartStyleFromString(args.restart, "--restart");

  auto ws = session.workspace(target, 0);
  Judged j = Session::judge(*ws, sc, s, true);
  RunRecord r;
  r.id = "run";
  r.target = target.name;
  r.verdict = verdictWord(j);
  r.error = j.error;
  r.schedule = j.schedule;
  r.history = j.history.ops();
  r.results = j.results;
  r.logs = session.writeLogs(j, "run");

  auto report = reportHeader("run", session, r.verdict);
  if (!j.error.empty()) report["error"] = j.error;
  report["schedule"] = s;
  report["violations"] = violationsOf({r});
  report["processes"] = processesOf(r.history, r.logs);
  report["runs"] = nlohmann::json::array({runJson(r)});
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  report["timings"] = {{"total_ms", ms}, {"schedules", 1}};
  std::string path = writeReport(session.reportDir().string(), report);
  if (!common.junit.empty()) writeJunit(common.junit, report);

  std::cout << fmt::format("{} × {}: {} — {}\n", target.name, sc.name, r.verdict, s.summary());
  if (!j.error.empty()) std::cerr << errorLine(j.error, r.logs, session.reportDir()) << "\n";
  if (j.error.empty() && j.verdict == Verdict::Unknown) { // one line on stderr: why it can't be judged
    for (const auto& c : j.results)
      if (c.verdict == Verdict::Unknown && !c.error.empty()) {
        std::cerr << "idemproof: unknown: " << c.checker << ": " << c.error << "\n";
        break;
      }
  }
  for (const auto& c : j.results) {
    for (const auto& v : c.violations) std::cout << "  " << violationLine(v) << "\n";
    if (c.verdict == Verdict::Unknown && !c.error.empty()) std::cout << "  unknown: " << c.checker << ": " << c.error << "\n";
  }
  std::cout << "report: " << path << "\n";
  return exitStatus(r.verdict);
}

} // namespace idem
