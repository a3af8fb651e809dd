/// brokers_bench: the harness's share of a schedule's wall time on each broker (Valkey, Kafka, NATS,
/// RabbitMQ), against a direct run of the same consumer.
///
///   brokers_bench [SCHEDULES=20] [KAFKA_SCHEDULES=8] [EVENTS=0]
///
/// One process, one embedded PostgreSQL for all, one worker, no fault. Each broker's C++ dedup-table target
/// (dedup-table, kafka-dedup-table, nats-dedup-table, amqp-dedup-table) runs the wallet scenario's default
/// schedule as `run` runs it (EVENTS > 0: generatedSchedule of EVENTS events, seed 1). Per broker, after
/// one untimed round of each (the first run of a namespace connects and warms up):
///  - harness: WorkerPool::judge of the schedule on worker 0 (Workspace::execute — reset, send, proxies,
///    spawn, settle, stop, observe — then the checkers);
///  - direct (bench/direct.h DirectBroker): the same messages and consumer without proxies, history or
///    checkers, on a namespace and a database of its own (reset excluded from its time): the messages
///    published as the harness publishes them, one consumer pointed straight at the broker, stopped
///    (SIGTERM) once the broker says every message is delivered and none is pending;
/// taken in turn (harness, direct, harness, direct, …) so that load from elsewhere falls on both alike.
/// Kafka's schedules take seconds each (the mock's 3 s join delay, both sides pay it): fewer of them.
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

/// Alternates harness and direct runs of `s`.
Figures measure(WorkerPool& pool, size_t target, const Schedule& s, bench::DirectBroker& direct, int n) {
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
  std::cout << fmt::format("  {:<8} {:<18} {:>3} events  direct {:>8.1f} ms  harness {:>8.1f} ms  harness share "
                           "{:>+6.1f}%  ({} schedules, {} passed)\n",
                           f.broker, f.target, f.events, d, h, 100.0 * (h - d) / d, n, f.passed);
  // The spread says how much of a small share is noise.
  std::cout << fmt::format("  {:<8} {:<28} quartiles  direct {:.1f}–{:.1f} ms  harness {:.1f}–{:.1f} ms\n", "", "",
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
  const int n = argc > 1 ? std::atoi(argv[1]) : 20;
  const int nKafka = argc > 2 ? std::atoi(argv[2]) : 8;
  const int events = argc > 3 ? std::atoi(argv[3]) : 0;
  setenv("IDEMPROOF_SCENARIOS", IDEM_SOURCE_DIR "/scenarios", 0);
  try {
    CommonArgs common;
    const std::vector<std::pair<std::string, std::string>> brokers{
        {"Valkey", "dedup-table"}, {"Kafka", "kafka-dedup-table"}, {"NATS", "nats-dedup-table"},
        {"RabbitMQ", "amqp-dedup-table"}};
    for (const auto& [title, target] : brokers) common.targets.push_back(IDEM_SOURCE_DIR "/targets/" + target);
    common.workers = 1;
    Session session(common);
    WorkerPool pool(session, 1);
    const auto& sc = session.scenario();
    std::vector<Figures> figures;
    for (size_t i = 0; i < brokers.size(); ++i) {
      const Target& t = session.targets()[i];
      Schedule s = events > 0 ? generatedSchedule(sc, events, 1) : defaultScheduleFor(session, t.name, 0);
      s.target = t.name;
      bench::DirectBroker direct(session, t);
      figures.push_back(measure(pool, i, s, direct, t.broker == "kafka" ? nKafka : n));
      figures.back().broker = brokers[i].first;
      figures.back().target = t.name;
    }
    std::cout << fmt::format("brokers_bench: {} scenario, 1 worker, no fault; medians, harness share = (harness - "
                             "direct) / direct (direct: reset excluded)\n",
                             sc.name);
    for (const auto& f : figures) print(f);
    for (const auto& f : figures) printPhases(f);
  } catch (const std::exception& e) {
    std::cerr << "brokers_bench: " << e.what() << "\n";
    Cleanup::instance().runAll();
    return 2;
  }
  Cleanup::instance().runAll();
  return 0;
}
