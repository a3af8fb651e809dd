/// idemproof sweep: one fault-free run records the trace of steps; then one run per kill point of that
/// trace, before and after each step, each judged. Which steps have no point, and why: history/trace.h.
/// A point whose kill never fired is run again, up to kRunsToReach runs in all; one that never fired is
/// unknown (and says so); so is the sweep when its fault-free run is.
/// A trace of more points than --reduce-above (default kSweepReduceAbove) runs the reduced selection of
/// history/point_class.h instead of every point, unless --exhaustive; each point run names its class.
#include "driver/commands.h"

#include "core/cleanup.h"
#include "core/error.h"

#include "driver/pool.h"
#include "driver/progress.h"
#include "driver/trace_from.h"
#include "history/point_class.h"
#include "history/trace.h"
#include "plan/fault_kind.h"
#include "report/check_verdict.h"
#include "report/html_util.h" // cut: a line cut at a character, not inside one
#include "report/shard_section.h"
#include "report/sweep_section.h"
#include "scenario/decodable.h"
#include "supervisor/http_body.h" // fnv64Hex

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>

namespace idem {

namespace {

/// Why an unknown point is unknown, for its line: the first reason, cut to a line's width (the report keeps
/// them whole); "" for a pass or a failure.
std::string unknownWhy(const Judged& j) {
  if (j.verdict == Verdict::Pass || j.verdict == Verdict::Fail) return "";
  std::string why = j.error;
  for (const auto& r : j.results)
    if (why.empty() && r.verdict == Verdict::Unknown && !r.error.empty()) why = r.checker + ": " + r.error;
  return html::cut(why, 110);
}

bool fired(const Judged& j) { return !recordsOf<ops::FaultOp>(j.history.ops()).empty(); }

std::string kindsText(const std::set<std::string>& kinds) {
  std::string out;
  for (const auto& k : kinds) out += (out.empty() ? "" : ",") + k;
  return out;
}

} // namespace

int sweepCommand(const CommonArgs& common, const SweepArgs& args) {
  Cleanup::ExitHold hold; // interrupted, the sweep still reports the points that finished before the signal
  auto t0 = std::chrono::steady_clock::now();
  Session session(common, [&](const Scenario& scenario, const std::vector<Target>&) {
    refuseEventsForHttp(scenario, args.events);
    if (scenario.http)
      for (const auto& k : common.faults) requireHttpFaultKind(k, "--faults");
  });
  const auto& sc = session.scenario();
  const auto& target = session.targets().front();
  // Values that decode with the one fault of a point, of whichever swept kind weighs most.
  const std::vector<std::string> swept = common.faults.empty() ? std::vector<std::string>{"kill"} : common.faults;
  int weight = 1;
  for (const auto& k : swept) weight = std::max(weight, faultKind(k, "--faults").weight());
  Schedule base = defaultScheduleFor(session, target.name, weight);
  if (args.events > 0) {
    base = generatedSchedule(sc, args.events, common.seed);
    base.target = target.name;
    base.values = makeDecodable(sc, base, weight);
  }
  const int reduceAbove = args.exhaustive ? -1 : args.reduceAbove >= 0 ? args.reduceAbove : kSweepReduceAbove;
  // Read before any server starts: a report that cannot give the trace is bad input.
  std::vector<Op> givenTrace;
  if (!args.traceFrom.empty())
    givenTrace = traceFrom(args.traceFrom, sc, base, weight, args.events > 0 || !common.scenarioValues);

  WorkerPool pool(session);
  Judged baseline = pool.judge(0, 0, base, true);
  const bool baselineSpoiled = Cleanup::interrupted() != 0; // judged after a signal: it says nothing of the target
  ReportBuilder report(session.header("sweep"));
  report.schedule(base);
  report.addRun(session.record(baseline, "baseline", target.name));
  SweepSection section;
  std::vector<TracePoint> points;
  std::vector<PointClass> classes;
  size_t tracePoints = 0, classesInTrace = 0;
  bool reduced = false;
  // Kill points come from a trace that can be judged: pass, or fail (a target that fails without faults
  // still has a trace). An unknown fault-free run says nothing certain about the steps: no point is run.
  const bool traceUsable = !baselineSpoiled && (baseline.verdict == Verdict::Pass || baseline.verdict == Verdict::Fail);
  if (traceUsable) {
    // The points of this run's fault-free trace, or of the one --trace-from gave (then every shard's).
    const std::vector<Op>& history = args.traceFrom.empty() ? report.runs().front().history : givenTrace;
    Trace trace = traceOf(history);
    points = std::move(trace.points);
    section.skipped = trace.skipped;
    classes = classifyPoints(history, points);
    tracePoints = points.size();
    classesInTrace = classCount(classes);
    // Above the bound, the reduced selection: a pure function of the trace, so every shard picks alike.
    if (reduceAbove >= 0 && points.size() > static_cast<size_t>(reduceAbove)) {
      reduced = true;
      std::vector<TracePoint> keptPoints;
      std::vector<PointClass> keptClasses;
      for (size_t i : reducedSelection(classes)) {
        keptPoints.push_back(points[i]);
        keptClasses.push_back(classes[i]);
      }
      points = std::move(keptPoints);
      classes = std::move(keptClasses);
    }
  }

  // One run per fault: every kind of --faults at every point where it applies (history/trace.h faultsAt).
  std::vector<Schedule> schedules;
  std::vector<size_t> pointOf; // index into points (and classes)
  const bool timedOut = std::any_of(base.client.begin(), base.client.end(), [](const ClientOp& c) {
    return c.kind == ClientOp::Kind::Send && c.wait == ClientOp::Wait::Timeout;
  });
  const int64_t pastLease = sc.http && timedOut && std::count(swept.begin(), swept.end(), "delay") > 0
                                ? sc.http->policy.leaseMs + kPastLeaseMs
                                : 0;
  // A sink whose consumer's timeout is declared: at each call a delay past it too (scenario.h SinkSpec).
  const int64_t pastCallTimeout = sc.sink && sc.sink->timeoutMs > 0 && std::count(swept.begin(), swept.end(), "delay") > 0
                                      ? sc.sink->timeoutMs + kPastLeaseMs
                                      : 0;
  for (size_t i = 0; i < points.size(); ++i) {
    std::vector<Fault> faults = faultsAt(points[i], swept, sweepDelayMs(common.run.claim_idle_ms));
    if (pastCallTimeout > 0 && points[i].server == "sink")
      for (Fault& f : faultsAt(points[i], {"delay"}, static_cast<int>(pastCallTimeout))) faults.push_back(std::move(f));
    // HTTP, with a timed-out request (another may run while it is held): a delay past the declared lease too.
    if (pastLease > 0)
      for (Fault& f : faultsAt(points[i], {"delay"}, static_cast<int>(pastLease))) faults.push_back(std::move(f));
    for (Fault& f : faults) {
      Schedule s = base;
      s.faults = {std::move(f)};
      schedules.push_back(std::move(s));
      pointOf.push_back(i);
    }
  }
  // What was planned, as one value: shards that traced different steps plan different faults (merge.cc).
  std::string planned;
  for (const auto& s : schedules) planned += s.faults.front().str() + "\n";
  section.faultsDigest = schedules.empty() ? "" : fnv64Hex(planned);
  if (!args.traceFrom.empty()) section.traceFrom = args.traceFrom;
  // A shard runs the faults whose index (in the order above) is in its slice; the baseline runs in every
  // shard, since the points come from its trace (or from --trace-from's).
  std::vector<size_t> indexOf(schedules.size());
  for (size_t i = 0; i < indexOf.size(); ++i) indexOf[i] = i;
  const size_t allFaults = schedules.size();
  if (common.shard) {
    std::vector<Schedule> mine;
    std::vector<size_t> minePoints;
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
  // A point judged once a signal came ran while the clean-up stopped its servers and processes: not counted.
  std::vector<char> spoiled(schedules.size(), 0);
  auto judged = pool.judgeAll(schedules, false, [&](size_t k, const Judged& j) {
    if (Cleanup::interrupted()) spoiled[k] = 1;
    progress.done(j.verdict == Verdict::Fail);
  });
  // A point whose fault did not fire runs again: the run that fires replaces the others.
  const std::vector<int> runsOf = pool.againUntilReached(judged, kRunsToReach, fired, [&](size_t k, const Judged& j) {
    if (Cleanup::interrupted()) spoiled[k] = 1;
    progress.addTotal(1);
    progress.done(j.verdict == Verdict::Fail);
  });
  progress.clear();

  int fails = baseline.verdict == Verdict::Fail && !baselineSpoiled ? 1 : 0, unknown = 0, notFired = 0;
  std::cout << fmt::format("sweep {} × {}: baseline {} ({}){}{}\n", target.name, sc.name, toString(baseline.verdict),
                           base.summary(), common.shard ? fmt::format("; shard {}: {} of {} faults", common.shard->str(),
                                                                      schedules.size(), allFaults) : "",
                           args.traceFrom.empty() ? "" : "; faults placed on the trace of " + args.traceFrom);
  if (!baseline.error.empty() && !baselineSpoiled) // cut by the clean-up: not the target's error
    std::cerr << errorLine(baseline.error, report.runs().front().logs, session.reportDir()) << "\n";
  std::cout << fmt::format("  {:<30} {:<7} {:<10} {}\n", "fault", "server", "verdict", "violations");
  size_t notRun = 0;
  std::string firstReplay; // of the first failing point, else of the first unknown one
  bool firstReplayFails = false;
  for (size_t i = 0; i < judged.size(); ++i) {
    const auto& j = judged[i];
    if (spoiled[i]) {
      ++notRun;
      continue;
    }
    bool f = fired(j);
    notFired += !f;
    fails += j.verdict == Verdict::Fail;
    unknown += j.verdict != Verdict::Fail && j.verdict != Verdict::Pass;
    auto kinds = j.kinds();
    const Fault& fault = j.schedule.faults.front();
    const TracePoint& p = points[pointOf[i]];
    section.points.push_back({fault.str(), fault.kind, p.server, p.detail, classes[pointOf[i]].key, j.verdict, f,
                              runsOf[i], kinds, common.shard ? std::optional<size_t>(indexOf[i]) : std::nullopt});
    // A failing or unknown point's schedule, to run it again alone (the fault-free run's schedule and its fault).
    if (f && j.verdict != Verdict::Pass) {
      section.points.back().replay = replayCommandOf(session, j.schedule, 0, fault.str());
      if (firstReplay.empty() || (j.verdict == Verdict::Fail && !firstReplayFails)) {
        firstReplay = *section.points.back().replay;
        firstReplayFails = j.verdict == Verdict::Fail;
      }
    }
    const std::string pattern = j.pattern();
    const std::string runs = runsOf[i] == 1 ? "" : f ? fmt::format(" (fired in run {} of the point)", runsOf[i])
                                                       : fmt::format(" (in none of {} runs)", runsOf[i]);
    std::cout << fmt::format("  {:<30} {:<7} {:<10} {}{}{}{}\n", fault.str(), p.server, f ? toString(j.verdict) : "not fired",
                             kindsText(kinds), pattern.empty() ? "" : " — " + pattern, f ? unknownWhy(j) : "", runs);
    if (j.verdict != Verdict::Pass) report.addRun(session.record(j, fault.str(), target.name));
  }
  // A sweep that ran no fault proves nothing about faults: unknown, naming why, never a pass.
  std::string nonePoints;
  if (traceUsable && allFaults == 0)
    nonePoints = tracePoints == 0 ? "the fault-free run recorded no step of the target to put a fault at"
                                  : fmt::format("none of the {} points of the fault-free trace takes a {} fault{}", tracePoints,
                                                fmt::join(swept, " or "),
                                                std::count(swept.begin(), swept.end(), "hold")
                                                    ? " (holds are swept with --interleave, two consumers at once)" : "");
  const std::string interrupted = Cleanup::interruptedName();
  // Interrupted, what ran is not the sweep asked for: never a pass, and no error of the target.
  const Verdict verdict = sweepVerdict({fails, unknown, notFired, traceUsable, !nonePoints.empty(),
                                        !baseline.error.empty(), !interrupted.empty()});
  if (!interrupted.empty()) {
    std::cout << fmt::format("  interrupted by {}: {} of {} faults not run (or cut short) and not counted\n", interrupted,
                             notRun, schedules.size());
  }
  if (!traceUsable && baseline.error.empty() && !baselineSpoiled) {
    std::cout << "  the fault-free run is unknown, so no kill point was run from its trace:\n";
    printResults(baseline, "    ");
  }
  if (!nonePoints.empty()) std::cout << "  unknown: no fault ran: " << nonePoints << "\n";
  report.verdict(verdict);
  report.interrupted(interrupted);
  if (interrupted.empty()) report.error(baseline.error);
  report.processesOf("baseline");
  section.faultKinds = swept;
  section.failed = fails;
  section.unknown = unknown;
  section.notFired = notFired;
  section.tracePoints = tracePoints;
  section.selectedPoints = points.size();
  section.classes = classesInTrace;
  section.reduced = reduced;
  section.notRun = notRun;
  if (reduceAbove >= 0) section.reduceAbove = reduceAbove;
  if (args.events > 0) section.events = args.events;
  if (!nonePoints.empty()) section.noFaults = nonePoints;
  report.section("sweep", section);
  if (common.shard) {
    ShardSection shard = shardSection(common.shard->index, common.shard->count, "sweep", static_cast<int64_t>(allFaults));
    shard.baseline = baseline.verdict;
    report.section("shard", shard);
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  // Interrupted: the schedules that ran to their end, which alone are counted.
  const size_t ran = schedules.size() - std::min(notRun, schedules.size());
  size_t again = 0; // the runs of points that had not fired
  for (int n : runsOf) again += static_cast<size_t>(n - 1);
  report.timings({{"total_ms", ms}, {"schedules", ran + 1 + again}});
  std::string path = report.write(session.reportDir().string(), common.junit);
  // `fails` counts the fault-free run's failure too (the verdict and the report's sweep.failed): the line
  // counts the faults' runs and says the fault-free run failed apart.
  const bool baselineFailed = baseline.verdict == Verdict::Fail && !baselineSpoiled;
  std::cout << fmt::format("{}: {} faults run ({}{}), {} failed{}, {} not fired{}, {} unknown, {} steps skipped; {} ms\n",
                           toString(verdict), ran, fmt::join(swept, ","),
                           reduced ? fmt::format("; reduced: {} of {} points, {} classes", points.size(), tracePoints,
                                                 classesInTrace) : "",
                           fails - (baselineFailed ? 1 : 0), baselineFailed ? " and the fault-free run" : "", notFired,
                           again ? fmt::format(" ({} runs again of points not reached)", again) : "",
                           unknown, section.skipped.size(), ms);
  if (!firstReplay.empty())
    std::cout << fmt::format("replay the first {} point: {} (each failing or unknown point's schedule is in {})\n",
                             firstReplayFails ? "failing" : "unknown", firstReplay,
                             (session.reportDir() / "schedules").string());
  std::cout << "report: " << path << "\n";
  return exitStatus(verdict);
}

} // namespace idem
