// Measures the embedded servers: a cold start (initdb into an empty template cache), then warm
// starts from the cache, and stops; plus each server's phases. Prints medians; asserts nothing.
// Usage: servers_bench [rounds=10]. Uses a private cache dir, removed at the end.
#include "core/cleanup.h"
#include "core/ports.h"
#include "core/temp_dir.h"
#include "servers/postgres.h"
#include "servers/servers.h"
#include "servers/valkey.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

using namespace idem;
using Clock = std::chrono::steady_clock;

namespace {

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void row(const char* what, const std::vector<double>& v) {
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  fmt::print("{:<44} median {:7.1f} ms   min {:7.1f}   max {:7.1f}   (n={})\n", what, median(v), *lo, *hi, v.size());
}

} // namespace

int main(int argc, char** argv) {
  Cleanup::installSignalHandlers();
  int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 10;
  TempDir cache("idemproof-bench-cache-");
  ::setenv("IDEMPROOF_CACHE_DIR", (cache.path() / "cache").c_str(), 1);

  auto t0 = Clock::now();
  auto cold = EmbeddedServers::start();
  double coldStart = msSince(t0);
  t0 = Clock::now();
  cold.reset();
  double coldStop = msSince(t0);
  fmt::print("cold start (initdb, template cached)          {:7.1f} ms; stop {:.1f} ms\n", coldStart, coldStop);

  std::vector<double> start, stop;
  for (int i = 0; i < rounds; ++i) {
    t0 = Clock::now();
    auto s = EmbeddedServers::start();
    start.push_back(msSince(t0));
    t0 = Clock::now();
    s.reset();
    stop.push_back(msSince(t0));
  }
  row("EmbeddedServers::start() from cache", start);
  row("EmbeddedServers destructor (both stopped)", stop);

  std::vector<double> copy, pgReady, pgStop, vkReady, vkStop;
  for (int i = 0; i < rounds; ++i) {
    t0 = Clock::now();
    servers::PgServer pg;
    copy.push_back(msSince(t0));
    t0 = Clock::now();
    pg.launch(freePort());
    pg.awaitReady(Clock::now() + std::chrono::seconds(15));
    pgReady.push_back(msSince(t0));
    t0 = Clock::now();
    pg.stop();
    pgStop.push_back(msSince(t0));

    servers::ValkeyServer vk;
    t0 = Clock::now();
    vk.launch(freePort());
    vk.awaitReady(Clock::now() + std::chrono::seconds(15));
    vkReady.push_back(msSince(t0));
    t0 = Clock::now();
    vk.stop();
    vkStop.push_back(msSince(t0));
  }
  row("  postgres: find binaries + copy template", copy);
  row("  postgres: spawn -> PQping ready", pgReady);
  row("  postgres: SIGINT fast shutdown -> reaped", pgStop);
  row("  valkey:   spawn -> PING ready", vkReady);
  row("  valkey:   SIGKILL -> reaped", vkStop);
  return 0;
}
