/// idemproof sweep --interleave: the default schedule with two consumers, every hold point of c1 against
/// every step of c2. c1 starts alone and receives the whole first batch of the stream (the supervisor
/// starts c2 once c1 has entries), so c1's steps are those of a single consumer's trace, and a hold named
/// for c1 stops it at the same step in every replay.
///
///  1. A fault-free run with two consumers: c1 does the work; its steps give the rows.
///  2. Per row, one run holding c1 at the row's point until c2 is idle (or waits on a lock c1 holds): c2
///     claims c1's entries once they are CLAIM_IDLE_MS old and works on them while c1 waits. The steps c2
///     made while c1 was held give the row's columns.
///  3. Per column, one run holding c1 at the row's point until c2 has passed the column's step.
///
/// Reduction of equivalent points (docs/faults.md): rows are c1's steps on the first entry it acknowledged
/// and on the first retry it acknowledged (a first delivery and a duplicate); its other entries run the
/// same steps in the same state (every entry after the held one is claimed by c2 alike). Columns are c2's
/// steps from the read that handed it entries up to its first acknowledgement (before that read c2 only
/// starts up, and a release there lets c1 go on before c2 has anything): c2 claims c1's held entry first (XAUTOCLAIM hands entries in
/// stream order, and c1 works in that order), so once c2 acknowledged it, releasing c1 later is the
/// release of the row's own run (when c2 is idle), which is the last column.
#include "driver/commands.h"

#include "core/cleanup.h"
#include "core/error.h"
#include "driver/session.h"

#include "checkers/holds.h"
#include "driver/pool.h"
#include "driver/progress.h"
#include "history/trace.h"
#include "report/shard_section.h"
#include "report/sweep_section.h"
#include "search/shard.h"
#include "supervisor/http_body.h" // fnv64Hex

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

namespace idem {

namespace {

/// A hold of c1 at `point` released when c2 passes `until` ("": when c2 is idle or waits on a lock).
Fault holdOf(const Fault& point, const std::string& until) {
  Fault f = point;
  f.kind = "hold";
  if (!until.empty()) {
    Fault u = Fault::parse(until, "interleave");
    f.args = {u.process, u.when == When::Before ? "before" : "after", u.step().substr(u.process.size() + 1)};
  }
  return f;
}

struct HoldCell {
  std::string until; ///< c2's point, "" for the row's own run (released when c2 is idle)
  size_t job = 0;    ///< index into the judged runs
};

struct HoldRow {
  Fault point; ///< c1:before|after:VERB#k
  std::string detail, server, role;
  size_t trace = 0; ///< the row's own run
  std::vector<HoldCell> cells;
};

bool holdFired(const Judged& j) { return !holdsOf(j.history.ops()).empty(); }

/// c2's kept steps made while c1 was held by the row's hold: after the hold's fault op and before its
/// release (checkers/holds.h reads both from the history), from the read that handed c2 entries (its
/// start-up before that is no step of the work) up to and including c2's first acknowledgement.
std::vector<std::string> columnsOf(const Judged& j) {
  auto ops = j.history.ops();
  auto holds = holdsOf(ops);
  const int64_t from = holds.empty() ? -1 : holds.front().fired;
  const int64_t to = holds.empty() || holds.front().released < 0 ? static_cast<int64_t>(ops.size()) : holds.front().released;
  std::vector<std::string> out;
  if (from < 0) return out;
  bool started = false; // from the read that handed c2 entries: before it, c2 only started up
  for (const auto& p : processSteps(ops, "c2")) {
    const auto& s = *p.step;
    if (p.op->index <= from || p.op->index >= to) continue;
    if (setUpStep(s) || !s.replied() || s.empty) continue;
    started = started || !s.delivered.empty();
    if (!started) continue;
    out.push_back(p.fault("kill", When::After).str());
    if (!s.acked.empty()) break; // its acknowledgement, whatever the broker
  }
  return out;
}


} // namespace

int interleaveCommand(const CommonArgs& common) {
  Cleanup::ExitHold hold; // interrupted, the sweep still reports the cells that finished before the signal
  auto t0 = std::chrono::steady_clock::now();
  if (httpScenario(common.scenario))
    throw UsageError(fmt::format("--interleave: scenario {} is an HTTP one: its replicas' holds are drawn by "
                                 "check --faults hold (or written in a schedule file), not swept as a grid",
                                 common.scenario));
  Session session(common);
  const auto& sc = session.scenario();
  const auto& target = session.targets().front();
  Schedule base = defaultScheduleFor(session, target.name, 2);
  base.consumers = 2;

  WorkerPool pool(session);
  Judged baseline = pool.judge(0, 0, base, true);
  const bool baselineSpoiled = Cleanup::interrupted() != 0; // judged after a signal: it says nothing of the target
  ReportBuilder report(session.header("sweep"));
  report.schedule(base);
  report.addRun(session.record(baseline, "baseline", target.name));
  std::cout << fmt::format("sweep --interleave {} × {}: baseline {} ({}){}\n", target.name, sc.name,
                           toString(baseline.verdict), base.summary(),
                           common.shard ? "; shard " + common.shard->str() : "");
  const bool traceUsable = !baselineSpoiled && (baseline.verdict == Verdict::Pass || baseline.verdict == Verdict::Fail);

  // Rows: c1's points on its first entry and on its first retry.
  std::vector<HoldRow> rows;
  if (traceUsable) {
    auto work = entryWork(report.runs().front().history, "c1");
    std::vector<const EntryWork*> chosen;
    for (const auto& w : work)
      if (!w.retry) { chosen.push_back(&w); break; }
    for (const auto& w : work)
      if (w.retry) { chosen.push_back(&w); break; }
    for (const auto* w : chosen) {
      for (const auto& p : w->steps) {
        for (When when : {When::Before, When::After}) {
          HoldRow r;
          r.point = p.fault("kill", when);
          r.detail = p.step->detail;
          r.server = p.step->server;
          r.role = fmt::format("{} of event {}", w->retry ? "retry" : "first delivery", w->event);
          rows.push_back(std::move(r));
        }
      }
    }
  }

  // Every shard plans all rows from its own baseline (their digest lets merge refuse shards whose traces
  // differ) and runs the rows whose index is in its slice, each with all its cells.
  std::string planned;
  for (const auto& r : rows) planned += r.point.point() + "\n";
  const size_t allRows = rows.size();
  std::vector<size_t> rowIndex;
  if (common.shard) {
    std::vector<HoldRow> mine;
    for (size_t i : shardItems(rows.size(), *common.shard)) {
      mine.push_back(std::move(rows[i]));
      rowIndex.push_back(i);
    }
    rows = std::move(mine);
  }

  // The rows' own runs, then their columns.
  std::vector<Schedule> schedules;
  for (auto& r : rows) {
    Schedule s = base;
    s.faults = {holdOf(r.point, "")};
    r.trace = schedules.size();
    schedules.push_back(std::move(s));
  }
  size_t total = rows.size();
  Progress progress("sweep --interleave " + target.name, total);
  // A run that ended after a signal was cut short by the clean-up (or never started): not counted.
  std::vector<char> spoiled(schedules.size(), 0);
  auto judged = pool.judgeAll(schedules, false, [&](size_t i, const Judged& j) {
    if (Cleanup::interrupted()) spoiled[i] = 1;
    progress.done(j.verdict == Verdict::Fail);
  });
  std::vector<Schedule> cellSchedules;
  for (auto& r : rows) {
    for (const auto& until : columnsOf(judged[r.trace])) {
      Schedule s = base;
      s.faults = {holdOf(r.point, until)};
      r.cells.push_back({until, judged.size() + cellSchedules.size()});
      cellSchedules.push_back(std::move(s));
    }
    r.cells.push_back({"", r.trace});
  }
  progress.clear();
  Progress progress2("sweep --interleave " + target.name + " (cells)", cellSchedules.size());
  const size_t rowRuns = judged.size();
  spoiled.resize(rowRuns + cellSchedules.size(), 0);
  auto more = pool.judgeAll(cellSchedules, false, [&](size_t i, const Judged& j) {
    if (Cleanup::interrupted()) spoiled[rowRuns + i] = 1;
    progress2.done(j.verdict == Verdict::Fail);
  });
  for (auto& j : more) judged.push_back(std::move(j));
  // A hold that did not fire (c1 never held what it was to hold) runs again: the run that fires replaces it.
  const std::vector<int> runsOf = pool.againUntilReached(judged, kRunsToReach, holdFired, [&](size_t k, const Judged& j) {
    if (Cleanup::interrupted()) spoiled[k] = 1;
    progress2.addTotal(1);
    progress2.done(j.verdict == Verdict::Fail);
  });
  progress2.clear();

  int fails = baseline.verdict == Verdict::Fail && !baselineSpoiled ? 1 : 0, unknown = 0, notFired = 0;
  size_t notRun = 0;
  InterleaveGrid grid;
  for (size_t k = 0; k < rows.size(); ++k) {
    const auto& r = rows[k];
    InterleaveRow row{r.point.point(), r.server, r.detail, r.role, {}, {}};
    if (common.shard) row.index = rowIndex[k];
    std::string line;
    for (const auto& c : r.cells) {
      const auto& j = judged[c.job];
      if (spoiled[c.job]) {
        ++notRun;
        continue;
      }
      bool f = holdFired(j);
      notFired += !f;
      fails += j.verdict == Verdict::Fail;
      unknown += j.verdict != Verdict::Fail && j.verdict != Verdict::Pass;
      const Fault& fault = j.schedule.faults.front();
      row.cells.push_back({c.until.empty() ? "idle" : c.until, fault.str(), j.verdict, f, runsOf[c.job], j.kinds()});
      line += fmt::format(" {}={}", c.until.empty() ? "idle" : c.until.substr(c.until.find(':') + 1),
                          !f ? "not-fired" : j.verdict == Verdict::Fail ? "FAIL(" + fmt::format("{}", fmt::join(j.kinds(), ",")) + ")" : toString(j.verdict));
      if (j.verdict != Verdict::Pass) report.addRun(session.record(j, fault.str(), target.name));
    }
    total += r.cells.size() - 1;
    grid.rows.push_back(std::move(row));
    std::cout << fmt::format("  hold {:<24}{}\n", r.point.point(), line);
  }
  for (int n : runsOf) total += static_cast<size_t>(n - 1); // the holds run again
  // No cell at all proves nothing: never a pass; nor does a grid a signal cut short.
  const std::string interrupted = Cleanup::interruptedName();
  Verdict verdict = fails ? Verdict::Fail
                    : (unknown || notFired || !traceUsable || grid.rows.empty() || !interrupted.empty())
                        ? Verdict::Unknown
                        : Verdict::Pass;
  // Interrupted, the baseline's error is the clean-up's doing, not the target's.
  const bool baselineError = !baseline.error.empty() && !baselineSpoiled;
  if (baselineError) verdict = Verdict::Error;
  if (baselineError)
    std::cerr << errorLine(baseline.error, report.runs().front().logs, session.reportDir()) << "\n";
  if (!interrupted.empty())
    std::cout << fmt::format("  interrupted by {}: {} of {} runs not run (or cut short) and not counted\n", interrupted,
                             notRun, spoiled.size());
  if (!traceUsable && baseline.error.empty() && !baselineSpoiled) {
    std::cout << "  the fault-free run is unknown, so no hold point was run from its trace:\n";
    printResults(baseline, "    ");
  }
  report.verdict(verdict);
  report.interrupted(interrupted);
  if (baselineError) report.error(baseline.error);
  report.processesOf("baseline");
  grid.consumers = 2;
  grid.failed = fails;
  grid.unknown = unknown;
  grid.notFired = notFired;
  grid.reduction = "rows: c1's steps on its first entry and first retry; columns: c2's steps while c1 was held, from "
                   "its first delivering read to its first acknowledgement, and idle";
  SweepSection sweep;
  sweep.faultsDigest = planned.empty() ? "" : fnv64Hex(planned);
  sweep.faultKinds = {"hold"};
  sweep.failed = fails;
  sweep.unknown = unknown;
  sweep.notFired = notFired;
  sweep.interleave = std::move(grid);
  report.section("sweep", sweep);
  if (common.shard) {
    ShardSection shard = shardSection(common.shard->index, common.shard->count, "sweep", static_cast<int64_t>(allRows));
    shard.baseline = baseline.verdict;
    report.section("shard", shard);
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  report.timings({{"total_ms", ms}, {"schedules", total + 1}});
  std::string path = report.write(session.reportDir().string(), common.junit);
  std::cout << fmt::format("{}: {} hold points × c2's steps, {} runs, {} failed, {} not fired, {} unknown; {} ms\n",
                           toString(verdict), rows.size(), total, fails, notFired, unknown, ms);
  std::cout << "report: " << path << "\n";
  return exitStatus(verdict);
}

} // namespace idem
