/// kafka_bench: the harness's share of a schedule's wall time on Kafka and on Valkey, each against a
/// direct run of the same consumer.
///
///   kafka_bench [KAFKA_SCHEDULES=12] [VALKEY_SCHEDULES=30] [EVENTS=0]
///
/// One process, one embedded Postgres and Valkey for both brokers, one worker, no fault. The schedule is the
/// wallet scenario's default one as `run` runs it (EVENTS > 0: generatedSchedule of EVENTS events, seed 1).
/// Per broker, after one untimed round of each (the first run of a workspace connects and warms up):
///  - harness: WorkerPool::judge of the schedule on worker 0 (Workspace::execute — reset, send, proxies,
///    spawn, settle, stop, observe — then the checkers);
///  - direct (bench/direct.h): the same events and consumer without proxies, history or checkers, on a
///    database of its own (reset excluded from its time). Valkey: XADD, one consumer, wait until every
///    entry is acknowledged, SIGTERM. Kafka: a broker of its own (EmbeddedKafka), a new topic and group,
///    the records produced as KafkaBroker::publish does, one consumer with KAFKA_BOOTSTRAP straight at
///    the broker, poll until the group's committed offsets are the log end, SIGTERM;
/// taken in turn (harness, direct, harness, direct, …) so that load from elsewhere falls on both alike.
/// Prints per broker the median direct and harness ms, the harness share (harness − direct) / direct, the
/// schedule count, the quartiles of both, and where the harness's milliseconds went (supervisor/workspace.h
/// PhaseTimes).
/// Asserts nothing.
#include "direct.h"

#include "core/cleanup.h"
#include "driver/commands.h"
#include "driver/pool.h"
#include "driver/session.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>

using namespace idem;
using bench::Clock;
using bench::msSince;

namespace {

/// The q-quantile (0..1) by linear interpolation between the order statistics.
double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double at = q * double(v.size() - 1);
  const size_t lo = static_cast<size_t>(at);
  return lo + 1 < v.size() ? v[lo] + (at - double(lo)) * (v[lo + 1] - v[lo]) : v[lo];
}

double median(const std::vector<double>& v) { return quantile(v, 0.5); }

struct Figures {
  std::string broker, target;
  size_t events = 0;
  std::vector<double> harness, direct;
  PhaseTimes phases; ///< summed over the timed harness runs
  int passed = 0;
};

/// Alternates harness and direct runs of `s`; `reset` and `run` are the direct driver's.
template <class Direct>
Figures measure(WorkerPool& pool, size_t target, const Schedule& s, Direct& direct, int n) {
  Figures f;
  f.events = s.stream.size();
  for (int i = -1; i < n; ++i) { // round -1: untimed
    auto t0 = Clock::now();
    Judged j = pool.judge(0, target, s);
    double h = msSince(t0);
    if (j.verdict == Verdict::Error) throw std::runtime_error("the harness run could not be judged: " + j.error);
    direct.reset();
    double d = direct.run(s);
    if (i < 0) continue;
    f.harness.push_back(h);
    f.direct.push_back(d);
    f.passed += j.verdict == Verdict::Pass;
    for (const auto& [name, ms] : j.phases) f.phases[name] += ms;
  }
  return f;
}

void print(const Figures& f) {
  const double h = median(f.harness), d = median(f.direct);
  const int n = static_cast<int>(f.harness.size());
  std::cout << fmt::format("  {:<7} {:<18} {:>3} events  direct {:>8.1f} ms  harness {:>8.1f} ms  harness share "
                           "{:>+6.1f}%  ({} schedules, {} passed)\n",
                           f.broker, f.target, f.events, d, h, 100.0 * (h - d) / d, n, f.passed);
  // The spread says how much of a small share is noise.
  std::cout << fmt::format("  {:<7} {:<28} quartiles  direct {:.1f}–{:.1f} ms  harness {:.1f}–{:.1f} ms\n", "", "",
                           quantile(f.direct, 0.25), quantile(f.direct, 0.75), quantile(f.harness, 0.25),
                           quantile(f.harness, 0.75));
}

void printPhases(const Figures& f) {
  const int n = static_cast<int>(f.harness.size());
  std::cout << fmt::format("  {} harness phases (mean ms per schedule):\n", f.broker);
  const std::vector<std::string> order{"reset", "send",  "proxies", "spawn",   "start-up", "claim-wait",
                                       "work",  "kill",  "settle",  "stop",    "observe",  "judge"};
  double total = 0;
  for (const auto& [name, ms] : f.phases) total += ms;
  auto line = [&](const std::string& name, double ms) {
    std::cout << fmt::format("    {:<11} {:>8.1f} ms  {:>5.1f}%\n", name, ms / n, total > 0 ? 100.0 * ms / total : 0.0);
  };
  for (const auto& name : order)
    if (auto it = f.phases.find(name); it != f.phases.end()) line(name, it->second);
  for (const auto& [name, ms] : f.phases)
    if (std::find(order.begin(), order.end(), name) == order.end()) line(name, ms);
  double mean = 0;
  for (double v : f.harness) mean += v;
  mean /= n;
  std::cout << fmt::format("    {:<11} {:>8.1f} ms  (mean harness run {:.1f} ms)\n", "sum", total / n, mean);
}

} // namespace

int main(int argc, char** argv) {
  Cleanup::installSignalHandlers();
  const int nKafka = argc > 1 ? std::atoi(argv[1]) : 12;
  const int nValkey = argc > 2 ? std::atoi(argv[2]) : 30;
  const int events = argc > 3 ? std::atoi(argv[3]) : 0;
  setenv("IDEMPROOF_SCENARIOS", IDEM_SOURCE_DIR "/scenarios", 0);
  try {
    CommonArgs common;
    common.targets = {IDEM_SOURCE_DIR "/targets/dedup-table", IDEM_SOURCE_DIR "/targets/kafka-dedup-table"};
    common.workers = 1;
    Session session(common);
    WorkerPool pool(session, 1);
    const auto& sc = session.scenario();
    auto scheduleFor = [&](const Target& t) {
      Schedule s = events > 0 ? generatedSchedule(sc, events, 1) : defaultScheduleFor(session, t.name, 0);
      s.target = t.name;
      return s;
    };
    std::vector<Figures> figures;
    {
      const Target& t = session.targets()[1];
      bench::DirectKafka direct(session, t);
      figures.push_back(measure(pool, 1, scheduleFor(t), direct, nKafka));
      figures.back().broker = "Kafka";
      figures.back().target = t.name;
    }
    {
      const Target& t = session.targets()[0];
      bench::DirectValkey direct(session, t, 0);
      figures.push_back(measure(pool, 0, scheduleFor(t), direct, nValkey));
      figures.back().broker = "Valkey";
      figures.back().target = t.name;
    }
    std::cout << fmt::format("kafka_bench: {} scenario, 1 worker, no fault; medians, harness share = (harness - direct) "
                             "/ direct (direct: reset excluded)\n",
                             sc.name);
    for (const auto& f : figures) print(f);
    for (const auto& f : figures) printPhases(f);
  } catch (const std::exception& e) {
    std::cerr << "kafka_bench: " << e.what() << "\n";
    Cleanup::instance().runAll();
    return 2;
  }
  Cleanup::instance().runAll();
  return 0;
}
