/// idemproof sweep: one fault-free run records the trace of steps; then one run per kill point of that
/// trace, before and after each step, each judged. Which steps have no point, and why: history/trace.h.
/// A point whose kill never fired is unknown (and says so); so is the sweep when its fault-free run is.
#include "driver/commands.h"

#include "driver/pool.h"
#include "driver/progress.h"
#include "history/trace.h"
#include "plan/fault_kind.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>

namespace idem {

namespace {

bool fired(const Judged& j) { return !recordsOf<ops::FaultOp>(j.history.ops()).empty(); }

std::string kindsText(const std::set<std::string>& kinds) {
  std::string out;
  for (const auto& k : kinds) out += (out.empty() ? "" : ",") + k;
  return out;
}

} // namespace

int sweepCommand(const CommonArgs& common) {
  auto t0 = std::chrono::steady_clock::now();
  Session session(common);
  const auto& sc = session.scenario();
  const auto& target = session.targets().front();
  // Values that decode with the one fault of a point, of whichever swept kind weighs most.
  const std::vector<std::string> swept = common.faults.empty() ? std::vector<std::string>{"kill"} : common.faults;
  int weight = 1;
  for (const auto& k : swept) weight = std::max(weight, faultKind(k, "--faults").weight());
  Schedule base = defaultScheduleFor(session, target.name, weight);

  WorkerPool pool(session);
  Judged baseline = pool.judge(0, 0, base, true);
  ReportBuilder report(session.header("sweep"));
  report.schedule(base);
  report.addRun(session.record(baseline, "baseline", target.name));
  nlohmann::json skipped = nlohmann::json::array();
  std::vector<TracePoint> points;
  // Kill points come from a trace that can be judged: pass, or fail (a target that fails without faults
  // still has a trace). An unknown fault-free run says nothing certain about the steps: no point is run.
  const bool traceUsable = baseline.verdict == Verdict::Pass || baseline.verdict == Verdict::Fail;
  if (traceUsable) {
    Trace trace = traceOf(report.runs().front().history);
    points = std::move(trace.points);
    for (const auto& sk : trace.skipped) skipped.push_back({{"step", sk.step}, {"reason", sk.reason}});
  }

  // One run per fault: every kind of --faults at every point where it applies (history/trace.h faultsAt).
  std::vector<Schedule> schedules;
  std::vector<const TracePoint*> pointOf;
  for (const auto& p : points) {
    for (Fault& f : faultsAt(p, swept, sweepDelayMs(common.run.claim_idle_ms))) {
      Schedule s = base;
      s.faults = {std::move(f)};
      schedules.push_back(std::move(s));
      pointOf.push_back(&p);
    }
  }
  // A shard runs the faults whose index (in the order above) is in its slice; the baseline runs in every
  // shard, since the points come from its trace.
  std::vector<size_t> indexOf(schedules.size());
  for (size_t i = 0; i < indexOf.size(); ++i) indexOf[i] = i;
  const size_t allFaults = schedules.size();
  if (common.shard) {
    std::vector<Schedule> mine;
    std::vector<const TracePoint*> minePoints;
    std::vector<size_t> mineIndex;
    for (size_t i : shardItems(schedules.size(), *common.shard)) {
      mine.push_back(std::move(schedules[i]));
      minePoints.push_back(pointOf[i]);
      mineIndex.push_back(i);
    }
    schedules = std::move(mine);
    pointOf = std::move(minePoints);
    indexOf = std::move(mineIndex);
  }
  Progress progress("sweep " + target.name, schedules.size());
  auto judged = pool.judgeAll(schedules, false, [&](size_t, const Judged& j) { progress.done(j.verdict == Verdict::Fail); });
  progress.clear();

  auto table = nlohmann::json::array();
  int fails = baseline.verdict == Verdict::Fail ? 1 : 0, unknown = 0, notFired = 0;
  std::cout << fmt::format("sweep {} × {}: baseline {} ({}){}\n", target.name, sc.name, toString(baseline.verdict),
                           base.summary(), common.shard ? fmt::format("; shard {}: {} of {} faults", common.shard->str(),
                                                                      schedules.size(), allFaults) : "");
  if (!baseline.error.empty())
    std::cerr << errorLine(baseline.error, report.runs().front().logs, session.reportDir()) << "\n";
  std::cout << fmt::format("  {:<30} {:<7} {:<10} {}\n", "fault", "server", "verdict", "violations");
  for (size_t i = 0; i < judged.size(); ++i) {
    const auto& j = judged[i];
    bool f = fired(j);
    notFired += !f;
    fails += j.verdict == Verdict::Fail;
    unknown += j.verdict != Verdict::Fail && j.verdict != Verdict::Pass;
    auto kinds = j.kinds();
    const Fault& fault = j.schedule.faults.front();
    const TracePoint& p = *pointOf[i];
    table.push_back({{"point", fault.str()}, {"kind", fault.kind}, {"server", p.server}, {"detail", p.detail},
                     {"verdict", toString(j.verdict)}, {"fired", f}, {"kinds", kinds}});
    if (common.shard) table.back()["index"] = indexOf[i];
    std::cout << fmt::format("  {:<30} {:<7} {:<10} {}\n", fault.str(), p.server, f ? toString(j.verdict) : "not fired",
                             kindsText(kinds));
    if (j.verdict != Verdict::Pass) report.addRun(session.record(j, fault.str(), target.name));
  }
  Verdict verdict = fails ? Verdict::Fail : (unknown || notFired || !traceUsable) ? Verdict::Unknown : Verdict::Pass;
  if (!baseline.error.empty()) verdict = Verdict::Error;
  if (!traceUsable && baseline.error.empty()) {
    std::cout << "  the fault-free run is unknown, so no kill point was run from its trace:\n";
    printResults(baseline, "    ");
  }
  report.verdict(verdict);
  report.error(baseline.error);
  report.processesOf("baseline");
  report.section("sweep", {{"points", table}, {"fault_kinds", swept}, {"skipped", skipped}, {"failed", fails}, {"unknown", unknown},
                           {"not_fired", notFired}});
  if (common.shard)
    report.section("shard", {{"index", common.shard->index}, {"count", common.shard->count}, {"command", "sweep"},
                             {"items", allFaults}, {"baseline", toString(baseline.verdict)}});
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  report.timings({{"total_ms", ms}, {"schedules", schedules.size() + 1}});
  std::string path = report.write(session.reportDir().string(), common.junit);
  std::cout << fmt::format("{}: {} faults run ({}), {} failed, {} not fired, {} unknown, {} steps skipped; {} ms\n",
                           toString(verdict), schedules.size(), fmt::join(swept, ","), fails, notFired, unknown,
                           skipped.size(), ms);
  std::cout << "report: " << path << "\n";
  return exitStatus(verdict);
}

} // namespace idem
