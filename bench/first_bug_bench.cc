/// first_bug_bench: how soon each approach finds the first violation of a buggy consumer, side by side in
/// one run, on the same embedded servers and worker pool, judged by idemproof's checkers in every case.
///
///   first_bug_bench [TRIALS=400] [SECONDS=240] [WORKERS=2] [SEED=1] [DIR:SCENARIO ...]
///
/// Per target (default: the reference stream targets that fail under kills alone, and the Python and Node
/// consumers tests/targets/py-ack-first and node-ack-first):
///  - base: the scenario's default events, each sent once, in order (no producer retry, one phase): the
///    fault-free workload, which must pass. Its duration D is its first spawn to its last step that
///    acknowledged entries (the end of its work; the idle reads until the run settles are left out): the
///    median of one run per worker at once, as the trials run.
///  - random: the approach of timer-based chaos tools. Trial i runs the base with
///    `timekill:c1:after:SPAWN#1:T`, T uniform in [0, D] to the microsecond (drawn from SEED and i): c1's group is SIGKILLed
///    T after its spawn, by a timer thread, wherever it is, and the consumer restarted, as at a kill point. Until the first
///    violation, or TRIALS trials, or SECONDS.
///  - check: `idemproof check` with its defaults (--runs 100, 1..6 events, 1-2 consumers, every fault kind,
///    seed SEED): its two trace runs and its search (the class sweep, then random schedules) until the first
///    failing schedule. Also with the class sweep left out (the random schedules alone: check before it).
///  - sweep: the base's trace and a kill at each of its points in sweep order (before, after of each step),
///    until the first failing point.
/// Every approach runs its trials on all WORKERS in index order and stops at the lowest failing index
/// (search/search.h searchCases), so trials are counted the same way: runs with a fault (or check's
/// schedules) up to the first failing one. Time is wall time from the approach's first run (its fault-free
/// or trace runs included) to the end of its first failing one. Prints ratios, asserts nothing.
#include "core/cleanup.h"
#include "driver/check.h"
#include "history/trace.h"
#include "scenario/decodable.h"
#include "search/classes.h"
#include "search/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <random>

using namespace idem;
using Clock = std::chrono::steady_clock;

namespace {

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Outcome {
  size_t trials = 0;     ///< runs until the first failure (included), or every run when none failed
  bool found = false;
  double seconds = 0;
  std::string what;      ///< the failing run: its kinds and schedule
};

std::string kindsOf(const CaseResult& o) {
  std::string out;
  for (const auto& k : o.kinds) out += (out.empty() ? "" : ",") + k;
  return out;
}

/// Runs schedules 0..n-1 (made by `make`) on the pool until the first failure, the trial budget or the time.
Outcome firstFailure(WorkerPool& pool, size_t n, double budgetS, Clock::time_point t0,
                     const std::function<Schedule(size_t)>& make) {
  std::vector<Schedule> ran(n);
  auto res = searchCases(
      n, pool.size(),
      [&](int w, size_t i) {
        ran[i] = make(i);
        return caseResultOf(pool.judge(w, 0, ran[i]));
      },
      [&] { return secondsSince(t0) > budgetS; });
  Outcome o;
  o.seconds = secondsSince(t0);
  o.trials = res.ran;
  if (res.firstFailure) {
    o.found = true;
    o.what = fmt::format("{}: {}", kindsOf(*res.failure), ran[*res.firstFailure].summary());
  }
  return o;
}

std::string cell(const Outcome& o) {
  return fmt::format("{}{:>4} {:>7.1f}s", o.found ? " " : ">", o.trials, o.seconds);
}

std::string ratio(const Outcome& random, const Outcome& o, bool trials) {
  if (!o.found) return "    -";
  double r = trials ? double(random.trials) / double(o.trials) : random.seconds / o.seconds;
  return fmt::format("{}{:>5.1f}x", random.found ? " " : ">", r);
}

} // namespace

int main(int argc, char** argv) {
  Cleanup::installSignalHandlers();
  size_t trials = argc > 1 ? std::stoul(argv[1]) : 400;
  double seconds = argc > 2 ? std::stod(argv[2]) : 240;
  int workers = argc > 3 ? std::atoi(argv[3]) : 2;
  uint64_t seed = argc > 4 ? std::stoull(argv[4]) : 1;
  std::vector<std::pair<std::string, std::string>> targets;
  for (int i = 5; i < argc; ++i) {
    std::string a = argv[i];
    auto colon = a.rfind(':');
    targets.emplace_back(a.substr(0, colon), colon == std::string::npos ? "wallet" : a.substr(colon + 1));
  }
  const std::string src = IDEM_SOURCE_DIR;
  if (targets.empty())
    targets = {{src + "/targets/simple", "wallet"},
               {src + "/targets/retry-no-dedup", "wallet"},
               {src + "/targets/dedup-valkey", "wallet"},
               {src + "/targets/ship-naive", "order-shipping"},
               {src + "/tests/targets/py-ack-first", "wallet"},
               {src + "/tests/targets/node-ack-first", "wallet"}};
  setenv("IDEMPROOF_SCENARIOS", IDEM_SOURCE_DIR "/scenarios", 0);
  auto tBench = Clock::now();
  struct Row {
    std::string target;
    Outcome random, check, checkRandom, sweep;
    double baseMs = 0;
  };
  std::vector<Row> rows;
  try {
    for (const auto& [dir, scenario] : targets) {
      CommonArgs common;
      common.targets = {dir};
      common.scenario = scenario;
      common.workers = workers;
      common.seed = seed;
      common.seedGiven = true;
      Session session(common);
      const auto& sc = session.scenario();
      const auto& t = session.targets().front();
      WorkerPool pool(session, workers);
      Row row;
      row.target = t.name;
      std::cout << fmt::format("{} × {}\n", t.name, sc.name) << std::flush;

      // The fault-free workload: every default event once, in order.
      Schedule base = defaultSchedule(sc);
      base.target = t.name;
      base.seed = seed;
      base.stream.clear();
      for (const auto& e : base.events) base.stream.push_back({e.n, 1});
      base.values = makeDecodable(sc, base, 1);
      auto t0 = Clock::now(); // random's time includes the runs that measure D
      // D under the trials' own conditions: the median of one fault-free run per worker at once (a lone run
      // starts the consumer faster than the trials do, and kills drawn over a short D would land in start-up).
      std::vector<Schedule> bases(static_cast<size_t>(std::max(2, workers)), base);
      std::vector<double> durations;
      bool passes = true;
      for (const auto& b : pool.judgeAll(bases, false)) {
        if (b.verdict != Verdict::Pass) passes = false;
        int64_t first = -1, last = 0;
        for (const auto& op : b.history.ops()) {
          if (op.as<ops::Spawn>() && first < 0) first = op.time_us;
          if (auto* st = op.as<ops::Step>(); st && st->replied() && !st->acked.empty()) last = op.time_us;
        }
        durations.push_back(double(last - std::max<int64_t>(first, 0)) / 1000.0);
      }
      if (!passes) {
        std::cout << fmt::format("  the fault-free base ({}) does not pass: skipped\n", base.summary());
        continue;
      }
      std::sort(durations.begin(), durations.end());
      row.baseMs = durations[durations.size() / 2];
      std::cout << fmt::format("  base: {}; fault-free duration {:.0f} ms (first spawn to the last acknowledgement, median of {} "
                               "runs at once)\n", base.summary(), row.baseMs, durations.size())
                << std::flush;

      // random: a SIGKILL at a uniform moment of the fault-free duration.
      row.random = firstFailure(pool, trials, seconds, t0, [&](size_t i) {
        std::mt19937_64 rng(seed * 1000003 + i);
        auto us = std::uniform_int_distribution<int64_t>(0, static_cast<int64_t>(row.baseMs * 1000))(rng);
        Schedule s = base;
        s.faults = {Fault::parse(fmt::format("timekill:c1:after:SPAWN#1:{}.{:03}", us / 1000, us % 1000), "bench")};
        return s;
      });
      std::cout << fmt::format("  random: {} trials (+ {} fault-free runs), {:.1f} s{}\n", row.random.trials, durations.size(), row.random.seconds,
                               row.random.found ? ": " + row.random.what : " (no violation)") << std::flush;

      // check, as `idemproof check` runs with its defaults: trace runs, then the search.
      CheckArgs args;
      CommonArgs cc = common;
      cc.faults = defaultCheckFaults(cc, args);
      auto runCheck = [&](bool classes) {
        auto t1 = Clock::now();
        CheckSummary sum;
        if (!learnModel(pool, sc, t, sum)) throw std::runtime_error("check's trace runs could not be judged");
        const ModelParams params = checkParams(cc, args);
        const Cases cases(shapeGen(sc, sum.model, params), classes ? classShapes(sc, sum.model, params) : std::vector<Shape>{},
                          params, seed);
        return firstFailure(pool, static_cast<size_t>(args.runs), seconds, t1, [&](size_t i) {
          Schedule s = materialize(cases.at(i).value(), sc, sum.model, seed, params);
          s.target = t.name;
          return s;
        });
      };
      row.check = runCheck(true);
      std::cout << fmt::format("  check: {} schedules (+ 2 trace runs), {:.1f} s{}\n", row.check.trials,
                               row.check.seconds, row.check.found ? ": " + row.check.what : "") << std::flush;
      row.checkRandom = runCheck(false);
      std::cout << fmt::format("  check without the class sweep: {} schedules (+ 2 trace runs), {:.1f} s{}\n", row.checkRandom.trials,
                               row.checkRandom.seconds, row.checkRandom.found ? ": " + row.checkRandom.what : "")
                << std::flush;

      // sweep: the base's trace, then a kill at each point in order.
      auto t2 = Clock::now();
      Judged trace = pool.judge(0, 0, base, true);
      std::vector<Schedule> points;
      for (const auto& p : traceOf(trace.history.ops()).points)
        for (Fault& f : faultsAt(p, {"kill"}, sweepDelayMs(common.run.claim_idle_ms))) {
          Schedule s = base;
          s.faults = {std::move(f)};
          points.push_back(std::move(s));
        }
      row.sweep = firstFailure(pool, points.size(), seconds, t2, [&](size_t i) { return points[i]; });
      std::cout << fmt::format("  sweep: {} of {} points (+ 1 trace run), {:.1f} s{}\n", row.sweep.trials,
                               points.size(), row.sweep.seconds, row.sweep.found ? ": " + row.sweep.what : "")
                << std::flush;
      rows.push_back(std::move(row));
    }
  } catch (const std::exception& e) {
    std::cerr << "first_bug_bench: " << e.what() << "\n";
    Cleanup::instance().runAll();
    return 2;
  }
  std::cout << fmt::format("\nfirst violation: runs and wall time, {} workers, seed {} (> : none within {} trials / {:.0f} s)\n",
                           workers, seed, trials, seconds);
  std::cout << fmt::format("{:<16} {:>14} {:>14} {:>14} {:>14}  {:>18} {:>18} {:>18}\n", "target", "random", "check",
                           "check(no class)", "sweep", "random/check r,t", "random/sweep r,t", "rnd/chk(no cls) r,t");
  for (const auto& r : rows)
    std::cout << fmt::format("{:<16} {:>14} {:>14} {:>14} {:>14}  {:>9}{:>9} {:>9}{:>9} {:>9}{:>9}\n", r.target,
                             cell(r.random), cell(r.check), cell(r.checkRandom), cell(r.sweep),
                             ratio(r.random, r.check, true), ratio(r.random, r.check, false),
                             ratio(r.random, r.sweep, true), ratio(r.random, r.sweep, false),
                             ratio(r.random, r.checkRandom, true), ratio(r.random, r.checkRandom, false));
  std::cout << fmt::format("bench wall time {:.0f} s\n", secondsSince(tBench));
  Cleanup::instance().runAll();
  return 0;
}
