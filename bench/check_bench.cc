/// check_bench: how fast `check` runs schedules, and how much of that time is the harness's own.
///
///   check_bench [SCHEDULES=60] [WORKERS=2] [TARGET_DIR=targets/dedup-table]
///
/// Generates SCHEDULES wallet schedules of 6 events with one kill point each (the model of `check`,
/// seed 1, no retries, one phase), then, in one process on the same embedded servers:
///  1. runs them the way `check` searches: a worker pool of WORKERS workspaces, proxies, kill points,
///     checkers -> schedules per second;
///  2. the same on 1 worker -> wall time per schedule, interleaved schedule by schedule with
///  3. a minimal direct driver (bench/direct.h DirectValkey): XADD the entries, run the consumer binary
///     with DATABASE_URL and VALKEY_URL pointing straight at the servers, SIGKILL it once half the entries are acknowledged
///     (the kill), start a second process after CLAIM_IDLE_MS (a plain driver can't hold its requests at a
///     proxy, so it sleeps), wait until every entry is acknowledged, SIGTERM -> the target's own work per
///     schedule (reset excluded);
///  4. the direct driver on WORKERS slots at once (a database and a Valkey db each) -> the schedules per
///     second this consumer allows on the host with no harness at all: the ceiling of (1);
///  5. what the host charges for what every schedule does many times: a page's first touch, a system
///     call, a fork and an exec (under a hypervisor that shadows page tables these cost 10-100x bare metal).
/// Then where each millisecond of a harness schedule goes: the phases of supervisor/workspace.h PhaseTimes.
/// The harness's share of wall time is 1 - direct / harness (1 worker). Prints ratios, asserts nothing.
#include "direct.h"

#include "core/child.h"
#include "core/cleanup.h"
#include "core/workers.h"
#include "driver/check.h"
#include "search/model.h"
#include "brokers/valkey/admin.h"
#include "supervisor/admin.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <cstdlib>
#include <iostream>

#include <spawn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

using namespace idem;
using bench::Clock;
using bench::msSince;

namespace {

struct MachineCosts {
  double pageTouchUs = 0, syscallUs = 0, spawnTrueMs = 0;
};

/// What the host charges for what every process start does thousands of times (map a fresh page,
/// enter the kernel) and for a process start itself. Medians of 5 rounds.
MachineCosts measureMachine() {
  auto median5 = [](auto f) {
    std::vector<double> v;
    for (int i = 0; i < 5; ++i) v.push_back(f());
    std::sort(v.begin(), v.end());
    return v[2];
  };
  MachineCosts m;
  m.pageTouchUs = median5([] {
    const size_t size = 8u << 20, page = 4096;
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 0.0;
    auto t0 = Clock::now();
    for (size_t off = 0; off < size; off += page) static_cast<volatile char*>(p)[off] = 1;
    double us = msSince(t0) * 1000.0 / double(size / page);
    munmap(p, size);
    return us;
  });
  m.syscallUs = median5([] {
    auto t0 = Clock::now();
    for (int i = 0; i < 20000; ++i) ::syscall(SYS_getppid);
    return msSince(t0) * 1000.0 / 20000;
  });
  m.spawnTrueMs = median5([] {
    auto t0 = Clock::now();
    for (int i = 0; i < 20; ++i) {
      pid_t pid = 0;
      char arg0[] = "true";
      char* args[] = {arg0, nullptr};
      if (posix_spawn(&pid, "/bin/true", nullptr, nullptr, args, environ) == 0) waitpid(pid, nullptr, 0);
    }
    return msSince(t0) / 20;
  });
  return m;
}

} // namespace

int main(int argc, char** argv) {
  Cleanup::installSignalHandlers();
  int n = argc > 1 ? std::atoi(argv[1]) : 60;
  int workers = argc > 2 ? std::atoi(argv[2]) : 2;
  std::string dir = argc > 3 ? argv[3] : std::string(IDEM_SOURCE_DIR) + "/targets/dedup-table";
  setenv("IDEMPROOF_SCENARIOS", IDEM_SOURCE_DIR "/scenarios", 0);
  try {
    CommonArgs common;
    common.targets = {dir};
    common.workers = workers;
    Session session(common);
    const auto& sc = session.scenario();
    const auto& t = session.targets().front();

    // The kill model, learned as check learns it, and the schedules.
    WorkerPool pool(session, workers);
    Schedule large = defaultSchedule(sc), small = large;
    for (auto& e : large.stream) e.phase = 1;
    small.events = {large.events.front()};
    small.stream = {{1, 1}};
    auto km = KillModel::learn(pool.judge(0, 0, small).history.ops(), 1, pool.judge(0, 0, large).history.ops(),
                               static_cast<int>(large.stream.size()));
    ModelParams p;
    p.minEvents = p.maxEvents = 6;
    p.minKills = p.maxKills = 1;
    p.maxRetriesPerEvent = 0;
    p.maxPhases = 1;
    p.drawRestart = false;
    auto gen = shapeGen(sc, km, p);
    std::vector<Schedule> schedules;
    for (int i = 0; i < n; ++i) {
      schedules.push_back(materialize(generateCase(gen, 1, static_cast<uint64_t>(i)).value(), sc, km, 1));
      schedules.back().target = t.name;
    }

    // 1. The search's way: all workers, wall time.
    std::atomic<int> fired{0}, passed{0};
    auto t0 = Clock::now();
    parallelFor(schedules.size(), workers, [&](int worker, size_t i) {
      CaseResult o = caseResultOf(pool.judge(worker, 0, schedules[i]));
      fired += static_cast<int>(o.fired.size());
      passed += o.verdict == Verdict::Pass;
    });
    double perW = msSince(t0) / n;
    // 2 and 3, interleaved schedule by schedule so that load from elsewhere falls on both alike.
    bench::DirectValkey direct(session, t, 0);
    std::vector<double> harness1, plain;
    PhaseTimes phases; // summed over the 1-worker runs
    for (const auto& s : schedules) {
      auto t1 = Clock::now();
      Judged j = pool.judge(0, 0, s);
      caseResultOf(j);
      harness1.push_back(msSince(t1));
      for (const auto& [name, ms] : j.phases) phases[name] += ms;
      direct.reset();
      plain.push_back(direct.run(s));
    }
    // 4. The direct driver on `workers` slots at once: this consumer's own ceiling on the host.
    std::vector<std::unique_ptr<bench::DirectValkey>> slots;
    for (int w = 1; w <= workers; ++w) slots.push_back(std::make_unique<bench::DirectValkey>(session, t, w));
    auto t4 = Clock::now();
    parallelFor(schedules.size(), workers, [&](int worker, size_t i) {
      slots[worker]->reset();
      slots[worker]->run(schedules[i]);
    });
    double perDirectW = msSince(t4) / n;
    const MachineCosts mc = measureMachine();
    auto mean = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / v.size(); };
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    double per1 = mean(harness1), perDirect = mean(plain);
    std::cout << fmt::format("check_bench: {} × {}, {} schedules of 6 events with 1 kill point (seed 1)\n", t.name, sc.name, n);
    std::cout << fmt::format("  {:<36} {:>6.1f} schedules/s  {:>6.1f} ms/schedule  ({} kills fired, {} passed)\n",
                             fmt::format("check, {} workers", workers), 1000.0 / perW, perW, fired.load(), passed.load());
    std::cout << fmt::format("  {:<36} {:>6.1f} schedules/s  {:>6.1f} ms/schedule  (median {:.1f})\n", "check, 1 worker",
                             1000.0 / per1, per1, median(harness1));
    std::cout << fmt::format("  {:<36} {:>6.1f} schedules/s  {:>6.1f} ms/schedule  (median {:.1f})\n",
                             "direct driver, no proxies/checkers", 1000.0 / perDirect, perDirect, median(plain));
    std::cout << fmt::format("  {:<36} {:>6.1f} schedules/s  {:>6.1f} ms/schedule  (resets included: the ceiling of check)\n",
                             fmt::format("direct driver, {} at once", workers), 1000.0 / perDirectW, perDirectW);
    std::cout << fmt::format("  harness share of wall time (1 worker): {:.0f}% (medians: {:.0f}%)   check/direct: {:.2f}x   "
                             "{} workers vs 1: {:.2f}x\n",
                             100.0 * (1.0 - perDirect / per1), 100.0 * (1.0 - median(plain) / median(harness1)),
                             per1 / perDirect, workers, per1 / perW);
    std::cout << fmt::format("  check with {} workers / direct with {} at once: {:.2f}x the direct rate\n", workers, workers,
                             perDirectW / perW);
    std::cout << fmt::format("  host: a page's first touch {:.1f} us, a system call {:.2f} us, posix_spawn+exit of "
                             "/bin/true {:.2f} ms (on bare metal each is well under 1 us, 0.3 us, 1 ms)\n",
                             mc.pageTouchUs, mc.syscallUs, mc.spawnTrueMs);
    // Where a schedule's milliseconds go (1 worker), in the order a schedule meets them.
    std::cout << "  per-phase breakdown, 1 worker (mean ms per schedule; docs: PhaseTimes in supervisor/workspace.h):\n";
    const std::vector<std::string> order{"reset", "send", "proxies", "spawn", "start-up", "claim-wait", "work", "kill",
                                         "settle", "stop", "observe", "judge"};
    double total = 0;
    for (const auto& [name, ms] : phases) total += ms;
    for (const auto& name : order) {
      double ms = phases.count(name) ? phases[name] / n : 0.0;
      std::cout << fmt::format("    {:<11} {:>7.2f} ms  {:>5.1f}%\n", name, ms, total > 0 ? 100.0 * ms * n / total : 0.0);
    }
    std::cout << fmt::format("    {:<11} {:>7.2f} ms  (timed outside the phases: {:.2f} ms)\n", "sum", total / n,
                             per1 - total / n);
  } catch (const std::exception& e) {
    std::cerr << "check_bench: " << e.what() << "\n";
    Cleanup::instance().runAll();
    return 2;
  }
  Cleanup::instance().runAll();
  return 0;
}
