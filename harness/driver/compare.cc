/// compareTargets: a fault-free baseline of the default schedule per target (run one at a time, so that
/// its cost is measured alone), then every other class against every target on a pool of workers, then
/// one cell per class x target.
#include "driver/compare.h"

#include "core/cleanup.h"
#include "core/workers.h"
#include "driver/pool.h"
#include "plan/fault_kind.h"
#include "report/check_verdict.h"
#include "scenario/decodable.h"
#include "search/case_result.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace idem::compare {

namespace {

/// The text forms of `faults`, joined by `sep`.
std::string faultsText(const std::vector<Fault>& faults, const char* sep) {
  std::vector<std::string> out;
  for (const auto& f : faults) out.push_back(f.str());
  return fmt::format("{}", fmt::join(out, sep));
}

struct Job {
  size_t column = 0; ///< index into the columns (columnsOf)
  size_t target = 0; ///< index into the session's targets
  std::string cls, id, title;
  Schedule schedule;
  Judged result;
  bool spoiled = false; ///< judged once a signal came: it ran (if at all) while the clean-up stopped everything
};

/// Runs `jobs[from..]` on the pool (all its workers, or one: `alone`). Once a signal came, a job is marked
/// spoiled (it ran while the clean-up stopped the servers, or the pool did not run it).
void runJobs(WorkerPool& pool, std::vector<Job>& jobs, size_t from, bool alone, Progress& progress) {
  std::mutex mu;
  const size_t n = jobs.size() - from;
  const int workers = alone ? 1 : std::max(1, std::min(pool.size(), static_cast<int>(n)));
  parallelFor(n, workers, [&](int w, size_t i) {
    Job& job = jobs[from + i];
    job.result = pool.judge(w, job.target, job.schedule);
    std::lock_guard<std::mutex> lock(mu);
    if (Cleanup::interrupted()) job.spoiled = true;
    progress.done(job.result.verdict == Verdict::Fail);
  });
}

/// "the scenario's own: 3 events, stream 2 3 1 1′ (′ a retry; phase 2: after the rest is acknowledged)".
std::string defaultDescription(const Schedule& s) {
  std::string stream;
  std::set<int> seen;
  bool late = false;
  for (const auto& e : s.stream) {
    stream += fmt::format("{}{}{}", stream.empty() ? "" : " ", e.event, seen.insert(e.event).second ? "" : "′");
    late = late || e.phase > 1;
  }
  return fmt::format("the scenario's own, no fault: {} events, stream {}{}", s.events.size(), stream,
                     late ? " (a later phase: sent after the rest is acknowledged)" : "");
}

/// A column's part of run ids and report folders: "sink-keyed", "sink-keyed/ignore".
std::string columnId(const Column& c) { return c.sinkPolicy.empty() ? c.name : c.name + "/" + c.sinkPolicy; }

/// A column's part of run titles: "", ", sink policy ignore".
std::string columnTitle(const Column& c) { return c.sinkPolicy.empty() ? "" : ", sink policy " + c.sinkPolicy; }

} // namespace

std::vector<Column> columnsOf(const std::vector<std::string>& names, const std::vector<std::string>& sinkPolicies) {
  std::vector<Column> out;
  for (size_t t = 0; t < names.size(); ++t) {
    if (sinkPolicies.empty()) out.push_back({t, names[t], ""});
    for (const auto& p : sinkPolicies) out.push_back({t, names[t], p});
  }
  return out;
}

const ClassedPoint& lastAcknowledgement(const std::vector<ClassedPoint>& points, const std::set<int64_t>& acks) {
  for (auto p = points.rbegin(); p != points.rend(); ++p)
    if (acks.count(p->opIndex) && p->fault.when == When::After) return *p;
  return points.back();
}

std::set<int64_t> acksOf(const std::vector<Op>& history) {
  std::set<int64_t> out;
  for (const auto& [op, s] : recordsOf<ops::Step>(history))
    if (!s->acked.empty()) out.insert(op->index);
  return out;
}

std::vector<std::string> sinkPoliciesToCompare(const Scenario& sc, const CommonArgs& args) {
  if (!sc.sink || !args.sinkPolicy.empty()) return {};
  return {"honour", "ignore"};
}

Matrix matrixOf(const std::vector<Class>& classes, const std::vector<Column>& columns,
                const std::vector<JudgedCell>& judged) {
  Matrix m;
  bool anyFail = false;
  for (size_t t = 0; t < columns.size(); ++t) {
    CompareTarget target;
    target.name = columns[t].name;
    target.sinkPolicy = columns[t].sinkPolicy;
    target.verdict = Verdict::Pass;
    for (const auto& c : classes) {
      CompareCell cell;
      cell.cls = c.id;
      cell.target = columns[t].name;
      cell.sinkPolicy = columns[t].sinkPolicy;
      int planned = 0, fired = 0, unreached = 0;
      std::optional<size_t> example;
      std::vector<std::string> points;
      for (size_t i = 0; i < judged.size(); ++i) {
        const auto& j = judged[i];
        if (j.target != t || j.cls != c.id) continue;
        ++cell.schedules;
        planned += j.planned;
        fired += std::min(j.fired, j.planned);
        if (CompareCell::hasPoints(c.kind)) points.push_back(j.point);
        if (j.verdict == Verdict::Fail) {
          ++cell.failed;
          cell.kinds.insert(j.kinds.begin(), j.kinds.end());
          if (!example || judged[*example].verdict != Verdict::Fail) example = i;
        } else if (j.verdict == Verdict::NotApplicable) {
          ++unreached;
        } else if (j.verdict != Verdict::Pass) {
          ++cell.unknown;
          if (!example && !j.notRun) example = i;
        }
      }
      cell.verdict = cell.schedules == unreached ? Verdict::NotApplicable
                     : cell.failed       ? Verdict::Fail
                     : cell.unknown      ? Verdict::Unknown
                                         : Verdict::Pass;
      cell.example = example ? judged[*example].id : "";
      if (cell.verdict == Verdict::Fail && example && !judged[*example].pattern.empty())
        cell.pattern = judged[*example].pattern;
      if (CompareCell::hasPoints(c.kind)) {
        cell.points = std::move(points);
        cell.faultsPlanned = planned; // coverage of the class: its kills and holds that fired
        cell.faultsFired = fired;
      }
      target.kinds.insert(cell.kinds.begin(), cell.kinds.end());
      if (cell.unknown > 0) ++target.unknownCells; // shown, and counted, even where the cell also fails
      if (cell.verdict == Verdict::Fail && target.example.empty()) target.example = cell.example;
      target.verdict = foldCellVerdict(target.verdict, cell.verdict);
      m.cells.push_back(std::move(cell));
      m.examples.push_back(example);
    }
    anyFail = anyFail || target.verdict == Verdict::Fail;
    m.unknownCells = m.unknownCells || target.unknownCells > 0;
    m.targets.push_back(std::move(target));
  }
  m.verdict = compareVerdict(anyFail, m.unknownCells);
  return m;
}

Verdict cellVerdict(const std::string& cls, const Schedule& s, const Judged& j) {
  // A race class's kill that the target's own course never reached (c2 exited on the race's 40001 before
  // any XACK) is coverage loss, counted in faults_fired, as in check: not an unknown cell. A kill or fault
  // class's point that this run of the target never reached (its steps vary from run to run: an offset
  // commit on a timer, records a fetch bundled otherwise), the run otherwise passing, did not test the
  // class: not applicable to that run, its faults_fired below its faults_planned (docs/verdicts.md). So
  // with a class of two faults of which one fired: slow work whose delay never came because the timer's
  // acknowledgement, and the kill after it, came first.
  const CaseResult o = classify(s, j.history.ops(), j.results, j.error);
  if (cls.rfind("race:", 0) == 0) {
    // A race that did not happen (no copy reached c2 while c1 was held) tested nothing: not a pass.
    return o.verdict == Verdict::Pass && !raced(cls, s, j.history.ops()) ? Verdict::NotApplicable : o.verdict;
  }
  if (o.verdict == Verdict::Pass && !o.planned.empty() && o.fired.size() < o.planned.size())
    return Verdict::NotApplicable;
  return j.verdict;
}

Comparison compareTargets(Session& session, const Options& options, Progress& progress) {
  const auto& sc = session.scenario();
  Options o = options;
  if (sc.http) { // an endpoint: faults at its steps and the client's behaviours (httpClasses)
    std::vector<std::string> kinds; // compare_cmd refused a kind named with --faults that an HTTP run has not
    for (const auto& k : o.faults)
      if (faultKind(k, "--faults").atHttpServer()) kinds.push_back(k);
    o.faults = std::move(kinds);
    o.races = false;
  }
  const auto& targets = session.targets();
  std::vector<std::string> names;
  for (const auto& t : targets) names.push_back(t.name);
  const std::vector<Column> cols = columnsOf(names, o.sinkPolicies);
  WorkerPool pool(session);

  std::vector<Class> classes{{"default", "schedule", "default schedule",
                              defaultDescription(defaultSchedule(sc))}};
  std::vector<Job> jobs;
  progress.addTotal(cols.size());
  // Every job of a column runs under its sink policy (the schedule carries it, and so its replay).
  auto forColumn = [&](Schedule s, size_t col) {
    s.sinkPolicy = cols[col].sinkPolicy;
    return s;
  };
  for (size_t col = 0; col < cols.size(); ++col) {
    Schedule s = forColumn(defaultScheduleFor(session, cols[col].name, 0), col);
    jobs.push_back({col, cols[col].target, "default", o.runPrefix + columnId(cols[col]) + "/default",
                    "default schedule" + columnTitle(cols[col]), s, {}});
  }
  runJobs(pool, jobs, 0, true, progress); // alone: their wall time is the cost

  std::vector<Class> kills, faults, races;
  std::vector<CompareCost> costs;
  for (size_t col = 0; col < cols.size(); ++col) {
    const size_t t = cols[col].target;
    if (jobs[col].spoiled) continue; // no trace to take the classes from
    const Judged& base = jobs[col].result;
    RunCost cost = costOf(base.history.ops());
    costs.push_back({targets[t].name, cols[col].sinkPolicy, cost.entries, cost.steps, cost.wall_us, cost.msgsPerSecond(),
                     cost.roundTripsPerMessage()});
    if (!base.error.empty()) continue;
    // Kill classes (the gap a kill falls in), then fault classes (kind and moment): each run on a sample.
    // (Both lists first: jobs grows below, and `base` lives in it.)
    std::vector<std::vector<ClassedPoint>> classed{classifyKillPoints(base.history.ops(), o.startOnce),
                                                   classifyFaultPoints(base.history.ops(), o.faults, o.delayMs)};
    const std::set<int64_t> acks = acksOf(base.history.ops());
    // HTTP: a delay past the declared lease while the client, timed out, retries (a lock's lease runs out).
    if (sc.http && std::count(o.faults.begin(), o.faults.end(), "delay") > 0)
      for (auto& p : classifyPastLeasePoints(base.history.ops(), static_cast<int>(sc.http->policy.leaseMs + kPastLeaseMs)))
        classed[1].push_back(std::move(p));
    // A consumer that acknowledges several entries at once: its work slowed past a commit timer, then killed.
    if (!sc.http && std::count(o.faults.begin(), o.faults.end(), "delay") > 0)
      for (auto& p : classifySlowWorkPoints(base.history.ops())) classed[1].push_back(std::move(p));
    auto raced = o.races ? raceSchedules(sc, forColumn(defaultScheduleFor(session, targets[t].name, 2), col), base.history.ops(),
                                         o.racePerClass < 0 ? o.perClass : o.racePerClass)
                         : std::vector<RaceSchedule>{};
    for (size_t which = 0; which < classed.size(); ++which) {
      std::vector<Class>* list = which == 0 ? &kills : &faults;
      std::map<std::string, std::vector<ClassedPoint>> byClass;
      std::vector<Class> mine;
      for (auto& p : classed[which]) {
        if (o.leaveOut.count(p.cls.id)) continue;
        if (sc.http && p.cls.id == "pause") { // no other consumer to claim: the server sleeps and wakes
          p.cls.label = "server paused (SIGSTOP), then woken";
          p.cls.description = fmt::format("pause:before|after:VERB#k: the server process stopped at its step for {} ms, "
                                          "then woken (SIGCONT) before its withheld bytes go on", kHttpPauseMs);
        }
        if (!byClass.count(p.cls.id)) mine.push_back(p.cls);
        byClass[p.cls.id].push_back(std::move(p));
      }
      mergeClassOrder(*list, mine);
      for (const auto& c : mine) {
        const auto& points = byClass[c.id];
        // A kind judged by a later retry (age): at the end of the trace, once every event was handled, and
        // the producer then retries event 1 in a phase of its own.
        const bool late = which == 1 && faultKind(points.front().fault.kind, "--faults").judgedByLateRetry();
        auto picked = which == 0 ? sample(points, o.perClass)
                      : late     ? std::vector<ClassedPoint>{lastAcknowledgement(points, acks)}
                                 : sampleCentered(points, o.perClass);
        for (const auto& p : picked) {
          const std::vector<int> counts = which == 0 || sc.http ? std::vector<int>{1} // one server process
                                                                : faultKind(p.fault.kind, "--faults").comparedConsumers();
          for (int n : counts) {
            std::vector<Fault> pointFaults{p.fault};
            pointFaults.insert(pointFaults.end(), p.also.begin(), p.also.end());
            Schedule s = forColumn(defaultScheduleFor(session, targets[t].name, applicationWeight(pointFaults)), col);
            if (p.cls.id == "delay-past-lease") s = pastLeaseSchedule(std::move(s));
            s.faults = pointFaults;
            if (n > 1) { // c1 takes the first batch, so its steps are the single consumer's
              s.consumers = n;
              s.faults[0].process = "c1";
            }
            if (late) {
              int phase = 1;
              for (const auto& e : s.stream) phase = std::max(phase, e.phase);
              StreamEntry retry;
              retry.event = 1;
              retry.phase = phase + 1;
              s.stream.push_back(retry);
              // The retry is one more delivery of event 1: the amounts must tell its application apart too.
              if (!session.args().scenarioValues) s.values = makeDecodable(sc, s, applicationWeight(p.fault));
            }
            const std::string f = faultsText(s.faults, ", ");
            jobs.push_back({col, t, c.id, o.runPrefix + columnId(cols[col]) + "/" + faultsText(s.faults, "+"),
                            fmt::format("{} ({}{}){}", c.label, f, n > 1 ? fmt::format(", {} consumers", n) : "",
                                        columnTitle(cols[col])),
                            s, {}});
          }
        }
      }
    }
    // Race classes: two consumers, c1 held at a step of its first entry (its steps are this baseline's).
    std::vector<Class> mine;
    std::map<std::string, int> serial;
    for (auto& r : raced) {
      if (o.leaveOut.count(r.cls.id)) continue;
      if (!serial.count(r.cls.id)) mine.push_back(r.cls);
      int i = ++serial[r.cls.id];
      r.schedule.target = targets[t].name;
      jobs.push_back({col, t, r.cls.id, fmt::format("{}{}/{}#{}", o.runPrefix, columnId(cols[col]), r.cls.id, i),
                      fmt::format("{} ({}){}", r.cls.label, faultsText(r.schedule.faults, ", "), columnTitle(cols[col])),
                      std::move(r.schedule), {}});
    }
    mergeClassOrder(races, mine);
  }
  auto generated = o.runs <= 0 ? std::vector<Generated>{} : sc.http ? httpClasses(sc, o.runs, o.seed)
                                                                     : generatedClasses(sc, o.runs, o.events, o.seed);
  for (auto& g : generated) {
    if (o.leaveOut.count(g.cls.id)) continue;
    classes.push_back(g.cls);
    for (size_t col = 0; col < cols.size(); ++col)
      for (size_t i = 0; i < g.schedules.size(); ++i) {
        Schedule s = forColumn(g.schedules[i], col);
        s.target = cols[col].name;
        jobs.push_back({col, cols[col].target, g.cls.id, fmt::format("{}{}/{}#{}", o.runPrefix, columnId(cols[col]), g.cls.id, i + 1),
                        fmt::format("{}, schedule {} of {} (seed {}){}", g.cls.label, i + 1, g.schedules.size(), s.seed,
                                    columnTitle(cols[col])),
                        s, {}});
      }
  }
  classes.insert(classes.end(), kills.begin(), kills.end());
  classes.insert(classes.end(), faults.begin(), faults.end());
  classes.insert(classes.end(), races.begin(), races.end());
  if (o.shard) { // keep the jobs of this shard's cells (the baselines, jobs[0..columns), ran already)
    std::map<std::string, size_t> classIndex;
    for (size_t c = 0; c < classes.size(); ++c) classIndex[classes[c].id] = c;
    std::vector<Job> mine(std::make_move_iterator(jobs.begin()), std::make_move_iterator(jobs.begin() + cols.size()));
    for (size_t i = cols.size(); i < jobs.size(); ++i)
      if (o.shard->contains(jobs[i].column * classes.size() + classIndex.at(jobs[i].cls))) mine.push_back(std::move(jobs[i]));
    jobs = std::move(mine);
  }
  progress.addTotal(jobs.size() - cols.size());
  runJobs(pool, jobs, cols.size(), false, progress);
  // A schedule whose point its run did not reach (its steps vary from run to run: how records fall into
  // batches, an offset commit on a timer) runs again, up to kRunsToReach runs in all, as sweep's points do;
  // the run that reaches it replaces the others.
  size_t reruns = 0;
  for (int round = 1; round < kRunsToReach && !Cleanup::interrupted(); ++round) {
    std::vector<size_t> which;
    std::vector<Job> again;
    for (size_t i = cols.size(); i < jobs.size(); ++i)
      if (!jobs[i].spoiled && cellVerdict(jobs[i].cls, jobs[i].schedule, jobs[i].result) == Verdict::NotApplicable) {
        which.push_back(i);
        again.push_back({jobs[i].column, jobs[i].target, jobs[i].cls, jobs[i].id, jobs[i].title, jobs[i].schedule, {}});
      }
    if (again.empty()) break;
    progress.addTotal(again.size());
    runJobs(pool, again, 0, false, progress);
    for (size_t k = 0; k < which.size(); ++k) jobs[which[k]] = std::move(again[k]);
    reruns += which.size();
  }

  Comparison out;
  out.schedules = jobs.size();
  out.again = reruns;
  std::vector<JudgedCell> judged;
  for (const auto& j : jobs) {
    if (j.spoiled) { // says nothing of the target: unknown, never an example
      ++out.notRun;
      JudgedCell c{j.column, j.cls, j.id, Verdict::Unknown, {}, faultsText(j.schedule.faults, " + "), 0, 0};
      c.notRun = true;
      judged.push_back(std::move(c));
      continue;
    }
    JudgedCell c{j.column, j.cls, j.id, j.result.verdict, j.result.kinds(), "", 0, 0};
    c.verdict = cellVerdict(j.cls, j.schedule, j.result);
    c.point = faultsText(j.schedule.faults, " + ");
    c.planned = static_cast<int>(j.schedule.faults.size());
    c.fired = static_cast<int>(recordsOf<ops::FaultOp>(j.result.history.ops()).size());
    c.pattern = j.result.pattern();
    judged.push_back(std::move(c));
  }
  Matrix m = matrixOf(classes, cols, judged);
  std::set<std::pair<size_t, std::set<std::string>>> shown; // (column, kinds) with a history in the report
  for (size_t i = 0; i < m.cells.size(); ++i) {
    if (!m.examples[i]) continue;
    const Job& example = jobs[*m.examples[i]];
    bool first = shown.insert({example.column, example.result.kinds()}).second || m.cells[i].verdict != Verdict::Fail;
    out.runs.push_back(session.record(example.result, example.id, targets[example.target].name, first, example.title,
                                      o.scenario));
    m.cells[i].replay = replayCommandOf(session, example.schedule, example.target, example.id);
  }
  for (size_t col = 0; col < cols.size(); ++col) m.targets[col].manifest = targets[cols[col].target].manifest.string();
  out.verdict = m.verdict;
  out.unknownCells = m.unknownCells;
  out.interrupted = Cleanup::interruptedName();
  out.compare = {.classes = classes, .targets = std::move(m.targets), .cells = std::move(m.cells),
                 .costs = std::move(costs), .runsPerClass = o.runs, .perClass = o.perClass, .events = o.events,
                 .seed = o.seed, .sinkPolicies = o.sinkPolicies};
  return out;
}

} // namespace idem::compare
