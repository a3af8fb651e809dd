/// idemproof sweep: one fault-free run records the trace of steps; then one run per kill point of that
/// trace, before and after each step, each judged. Which steps have no point, and why: history/trace.h.
#include "driver/commands.h"

#include "driver/progress.h"
#include "history/trace.h"
#include "report/junit.h"
#include "report/report.h"

#include <fmt/format.h>

#include <iostream>
#include <set>
#include <unistd.h>

namespace idem {

namespace {

std::set<std::string> kindsOf(const Judged& j) {
  std::set<std::string> kinds;
  for (const auto& c : j.results)
    for (const auto& v : c.violations) kinds.insert(v.kind);
  return kinds;
}

bool fired(const Judged& j) { return !recordsOf<ops::FaultOp>(j.history.ops()).empty(); }

RunRecord record(Session& session, const Judged& j, const std::string& id, const std::string& target) {
  RunRecord r;
  r.id = id;
  r.target = target;
  r.verdict = verdictWord(j);
  r.error = j.error;
  r.schedule = j.schedule;
  r.history = j.history.ops();
  r.results = j.results;
  r.withHistory = r.verdict != "pass";
  if (!j.logs.empty()) {
    std::string dir = id;
    for (char& c : dir)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    r.logs = session.writeLogs(j, dir);
  }
  return r;
}

} // namespace

int sweepCommand(const CommonArgs& common) {
  auto t0 = std::chrono::steady_clock::now();
  Session session(common);
  const auto& sc = session.scenario();
  const auto& target = session.targets().front();
  Schedule base = defaultScheduleFor(session, target.name, 1); // values that decode with the one kill of a point

  Judged baseline;
  {
    auto ws = session.workspace(target, 0);
    baseline = Session::judge(*ws, sc, base, true);
  }
  std::vector<RunRecord> runs{record(session, baseline, "baseline", target.name)};
  nlohmann::json skipped = nlohmann::json::array();
  std::vector<TracePoint> points;
  // Kill points come from a trace that can be judged: pass, or fail (a target that fails without faults
  // still has a trace). An unknown fault-free run says nothing certain about the steps: no point is run.
  const bool traceUsable = baseline.error.empty() && baseline.verdict != Verdict::Unknown;
  if (traceUsable) {
    Trace trace = traceOf(runs[0].history);
    points = std::move(trace.points);
    for (const auto& sk : trace.skipped) skipped.push_back({{"step", sk.step}, {"reason", sk.reason}});
  }

  std::vector<Schedule> schedules;
  for (const auto& p : points) {
    Schedule s = base;
    s.faults = {p.fault};
    schedules.push_back(std::move(s));
  }
  Progress progress("sweep " + target.name, schedules.size());
  auto judged = session.judgeAll(target, schedules, [&](size_t done) { progress.doneCount(done); });
  progress.clear();

  auto table = nlohmann::json::array();
  int fails = baseline.verdict == Verdict::Invalid ? 1 : 0, unknown = 0, notFired = 0;
  std::cout << fmt::format("sweep {} × {}: baseline {} ({})\n", target.name, sc.name, verdictWord(baseline), base.summary());
  if (!baseline.error.empty()) std::cerr << errorLine(baseline.error, runs[0].logs, session.reportDir()) << "\n";
  std::cout << fmt::format("  {:<24} {:<7} {:<10} {}\n", "kill point", "server", "verdict", "violations");
  for (size_t i = 0; i < judged.size(); ++i) {
    const auto& j = judged[i];
    std::string verdict = verdictWord(j);
    bool f = fired(j);
    if (!f) {
      verdict = "not-fired";
      ++notFired;
    }
    if (verdict == "fail") ++fails;
    if (verdict == "unknown" || verdict == "error") ++unknown;
    auto kinds = kindsOf(j);
    std::string ks;
    for (const auto& k : kinds) ks += (ks.empty() ? "" : ",") + k;
    table.push_back({{"point", points[i].fault.str()}, {"server", points[i].server}, {"detail", points[i].detail},
                     {"verdict", verdict}, {"fired", f}, {"kinds", kinds}});
    std::cout << fmt::format("  {:<24} {:<7} {:<10} {}\n", points[i].fault.str(), points[i].server, verdict, ks);
    if (verdict != "pass") runs.push_back(record(session, j, points[i].fault.str(), target.name));
  }
  std::string verdict = fails ? "fail" : (unknown || notFired || !traceUsable) ? "unknown" : "pass";
  if (!baseline.error.empty()) verdict = "error";
  if (!traceUsable && baseline.error.empty()) {
    std::cout << "  the fault-free run is unknown, so no kill point was run from its trace:\n";
    for (const auto& c : baseline.results)
      if (c.verdict == Verdict::Unknown && !c.error.empty()) std::cout << "    " << c.checker << ": " << c.error << "\n";
  }
  auto report = reportHeader("sweep", session, verdict);
  if (!baseline.error.empty()) report["error"] = baseline.error;
  report["schedule"] = base;
  report["sweep"] = {{"points", table}, {"skipped", skipped}, {"failed", fails}, {"unknown", unknown},
                     {"not_fired", notFired}};
  report["violations"] = violationsOf(runs);
  report["processes"] = processesOf(runs[0].history, runs[0].logs);
  auto arr = nlohmann::json::array();
  for (const auto& r : runs) arr.push_back(runJson(r));
  report["runs"] = arr;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  report["timings"] = {{"total_ms", ms}, {"schedules", schedules.size() + 1}};
  std::string path = writeReport(session.reportDir().string(), report);
  if (!common.junit.empty()) writeJunit(common.junit, report);
  std::cout << fmt::format("{}: {} kill points run, {} failed, {} not fired, {} unknown, {} steps skipped; {} ms\n",
                           verdict, schedules.size(), fails, notFired, unknown, skipped.size(), ms);
  std::cout << "report: " << path << "\n";
  return exitStatus(verdict);
}

} // namespace idem
