/// compareTargets: a fault-free baseline of the default schedule per target (run one at a time, so that
/// its cost is measured alone), then every other class against every target on a pool of workers, then
/// one cell per class x target.
#include "driver/compare.h"

#include "driver/pool.h"
#include "plan/fault_kind.h"
#include "report/check_verdict.h"
#include "scenario/decodable.h"
#include "search/case_result.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>

namespace idem::compare {

namespace {

struct Job {
  size_t target = 0;
  std::string cls, id, title;
  Schedule schedule;
  Judged result;
};

/// Runs `jobs[from..]` on the pool (all its workers, or one: `alone`).
void runJobs(WorkerPool& pool, std::vector<Job>& jobs, size_t from, bool alone, Progress& progress) {
  std::vector<WorkerPool::Job> work;
  for (size_t i = from; i < jobs.size(); ++i) work.push_back({jobs[i].target, jobs[i].schedule});
  auto done = [&](size_t, const Judged& j) { progress.done(j.verdict == Verdict::Fail); };
  std::vector<Judged> judged;
  if (alone) {
    for (size_t i = 0; i < work.size(); ++i) {
      judged.push_back(pool.judge(0, work[i].target, work[i].schedule));
      done(i, judged.back());
    }
  } else {
    judged = pool.judgeAll(work, false, done);
  }
  for (size_t i = 0; i < judged.size(); ++i) jobs[from + i].result = std::move(judged[i]);
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

} // namespace

Matrix matrixOf(const std::vector<Class>& classes, const std::vector<std::string>& targets,
                const std::vector<JudgedCell>& judged) {
  Matrix m;
  bool anyFail = false;
  for (size_t t = 0; t < targets.size(); ++t) {
    CompareTarget target;
    target.name = targets[t];
    target.verdict = Verdict::Pass;
    for (const auto& c : classes) {
      CompareCell cell;
      cell.cls = c.id;
      cell.target = targets[t];
      int planned = 0, fired = 0;
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
        } else if (j.verdict != Verdict::Pass) {
          ++cell.unknown;
          if (!example) example = i;
        }
      }
      cell.verdict = cell.schedules == 0 ? Verdict::NotApplicable
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
  WorkerPool pool(session);

  std::vector<Class> classes{{"default", "schedule", "default schedule",
                              defaultDescription(defaultSchedule(sc))}};
  std::vector<Job> jobs;
  progress.addTotal(targets.size());
  for (size_t t = 0; t < targets.size(); ++t) {
    Schedule s = defaultScheduleFor(session, targets[t].name, 0);
    jobs.push_back({t, "default", o.runPrefix + targets[t].name + "/default", "default schedule", s, {}});
  }
  runJobs(pool, jobs, 0, true, progress); // alone: their wall time is the cost

  std::vector<Class> kills, faults, races;
  std::vector<CompareCost> costs;
  for (size_t t = 0; t < targets.size(); ++t) {
    const Judged& base = jobs[t].result;
    RunCost cost = costOf(base.history.ops());
    costs.push_back({targets[t].name, cost.entries, cost.steps, cost.wall_us, cost.msgsPerSecond(), cost.roundTripsPerMessage()});
    if (!base.error.empty()) continue;
    // Kill classes (the gap a kill falls in), then fault classes (kind and moment): each run on a sample.
    // (Both lists first: jobs grows below, and `base` lives in it.)
    std::vector<std::vector<ClassedPoint>> classed{classifyKillPoints(base.history.ops()),
                                                   classifyFaultPoints(base.history.ops(), o.faults, o.delayMs)};
    // HTTP: a delay past the declared lease while the client, timed out, retries (a lock's lease runs out).
    if (sc.http && std::count(o.faults.begin(), o.faults.end(), "delay") > 0)
      for (auto& p : classifyPastLeasePoints(base.history.ops(), static_cast<int>(sc.http->policy.leaseMs + kPastLeaseMs)))
        classed[1].push_back(std::move(p));
    auto raced = o.races ? raceSchedules(sc, defaultScheduleFor(session, targets[t].name, 2), base.history.ops(),
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
                      : late     ? std::vector<ClassedPoint>{points.back()}
                                 : sampleCentered(points, o.perClass);
        for (const auto& p : picked) {
          const std::vector<int> counts = which == 0 || sc.http ? std::vector<int>{1} // one server process
                                                                : faultKind(p.fault.kind, "--faults").comparedConsumers();
          for (int n : counts) {
            Schedule s = defaultScheduleFor(session, targets[t].name, applicationWeight(p.fault));
            if (p.cls.id == "delay-past-lease") s = pastLeaseSchedule(std::move(s));
            s.faults = {p.fault};
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
            const std::string f = s.faults[0].str();
            jobs.push_back({t, c.id, o.runPrefix + targets[t].name + "/" + f,
                            fmt::format("{} ({}{})", c.label, f, n > 1 ? fmt::format(", {} consumers", n) : ""), s, {}});
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
      std::vector<std::string> fs;
      for (const auto& f : r.schedule.faults) fs.push_back(f.str());
      jobs.push_back({t, r.cls.id, fmt::format("{}{}/{}#{}", o.runPrefix, targets[t].name, r.cls.id, i),
                      fmt::format("{} ({})", r.cls.label, fmt::join(fs, ", ")), std::move(r.schedule), {}});
    }
    mergeClassOrder(races, mine);
  }
  auto generated = o.runs <= 0 ? std::vector<Generated>{} : sc.http ? httpClasses(sc, o.runs, o.seed)
                                                                     : generatedClasses(sc, o.runs, o.events, o.seed);
  for (auto& g : generated) {
    if (o.leaveOut.count(g.cls.id)) continue;
    classes.push_back(g.cls);
    for (size_t t = 0; t < targets.size(); ++t)
      for (size_t i = 0; i < g.schedules.size(); ++i) {
        Schedule s = g.schedules[i];
        s.target = targets[t].name;
        jobs.push_back({t, g.cls.id, fmt::format("{}{}/{}#{}", o.runPrefix, targets[t].name, g.cls.id, i + 1),
                        fmt::format("{}, schedule {} of {} (seed {})", g.cls.label, i + 1, g.schedules.size(), s.seed), s, {}});
      }
  }
  classes.insert(classes.end(), kills.begin(), kills.end());
  classes.insert(classes.end(), faults.begin(), faults.end());
  classes.insert(classes.end(), races.begin(), races.end());
  if (o.shard) { // keep the jobs of this shard's cells (the baselines, jobs[0..targets), ran already)
    std::map<std::string, size_t> classIndex;
    for (size_t c = 0; c < classes.size(); ++c) classIndex[classes[c].id] = c;
    std::vector<Job> mine(std::make_move_iterator(jobs.begin()), std::make_move_iterator(jobs.begin() + targets.size()));
    for (size_t i = targets.size(); i < jobs.size(); ++i)
      if (o.shard->contains(jobs[i].target * classes.size() + classIndex.at(jobs[i].cls))) mine.push_back(std::move(jobs[i]));
    jobs = std::move(mine);
  }
  progress.addTotal(jobs.size() - targets.size());
  runJobs(pool, jobs, targets.size(), false, progress);

  Comparison out;
  out.schedules = jobs.size();
  std::vector<std::string> names;
  for (const auto& t : targets) names.push_back(t.name);
  std::vector<JudgedCell> judged;
  for (const auto& j : jobs) {
    JudgedCell c{j.target, j.cls, j.id, j.result.verdict, j.result.kinds(), "", 0, 0};
    // A race class's kill that the target's own course never reached (c2 exited on the race's 40001
    // before any XACK) is coverage loss, counted in faults_fired, as in check: not an unknown cell.
    if (j.cls.rfind("race:", 0) == 0)
      c.verdict = classify(j.schedule, j.result.history.ops(), j.result.results, j.result.error).verdict;
    std::vector<std::string> fs;
    for (const auto& f : j.schedule.faults) fs.push_back(f.str());
    c.point = fmt::format("{}", fmt::join(fs, " + "));
    c.planned = static_cast<int>(j.schedule.faults.size());
    c.fired = static_cast<int>(recordsOf<ops::FaultOp>(j.result.history.ops()).size());
    c.pattern = j.result.pattern();
    judged.push_back(std::move(c));
  }
  Matrix m = matrixOf(classes, names, judged);
  std::set<std::pair<size_t, std::set<std::string>>> shown; // (target, kinds) with a history in the report
  for (size_t i = 0; i < m.cells.size(); ++i) {
    if (!m.examples[i]) continue;
    const Job& example = jobs[*m.examples[i]];
    bool first = shown.insert({example.target, example.result.kinds()}).second || m.cells[i].verdict != Verdict::Fail;
    out.runs.push_back(session.record(example.result, example.id, targets[example.target].name, first, example.title,
                                      o.scenario));
  }
  for (size_t t = 0; t < targets.size(); ++t) m.targets[t].manifest = targets[t].manifest.string();
  out.verdict = m.verdict;
  out.unknownCells = m.unknownCells;
  out.compare = {.classes = classes, .targets = std::move(m.targets), .cells = std::move(m.cells),
                 .costs = std::move(costs), .runsPerClass = o.runs, .perClass = o.perClass, .events = o.events,
                 .seed = o.seed};
  return out;
}

} // namespace idem::compare
