/// Added latency of the proxies: the same round trips, measured side by side in one run, directly to
/// the embedded servers and through idemproof's PostgreSQL and Valkey proxies (with a step listener that
/// counts steps, as a run's controller does). Prints medians and the added microseconds per round trip, and
/// per PostgreSQL connection opened (what each consumer start pays);
/// asserts nothing. Usage: proxy_bench [ROUND_TRIPS]
#include "proxy/hub.h"
#include "servers/servers.h"
#include "core/cleanup.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <libpq-fe.h>

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

/// Counts steps and never kills: the proxies' full decoding path with no fault.
struct Counting : idem::proxy::StepListener {
  int64_t steps = 0;
  idem::proxy::Decision onRequest(int, idem::proxy::Server, int, const idem::proxy::StepInfo&,
                                  idem::proxy::StepToken& t) override {
    t.id = ++steps;
    return {};
  }
  idem::proxy::Decision onReply(int, const idem::proxy::StepToken&, const idem::proxy::ReplyInfo&) override { return {}; }
  void onReleased(int, const idem::proxy::StepToken&) override {}
  void onCut(int, const idem::proxy::StepToken&, idem::proxy::CutKind) override {}
  void onOpaque(int, idem::proxy::Server, int, const char*, uint64_t, const std::string&) override {}
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Median microseconds of `n` round trips of `fn`, after a warm-up.
template <class F>
double timeIt(int n, F fn) {
  for (int i = 0; i < 50; ++i) fn();
  std::vector<double> us;
  us.reserve(n);
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    fn();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  return median(us);
}

double pgRoundTrips(int port, const std::string& password, int n) {
  std::string conninfo = fmt::format(
      "host=127.0.0.1 port={} user=postgres password={} dbname=postgres gssencmode=disable sslmode=disable", port,
      password);
  PGconn* c = PQconnectdb(conninfo.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    fmt::print(stderr, "connect: {}\n", PQerrorMessage(c));
    std::exit(2);
  }
  double us = timeIt(n, [&] { PQclear(PQexec(c, "SELECT 1")); });
  PQfinish(c);
  return us;
}

/// Median microseconds of `n` PostgreSQL connections opened and closed: TCP connect, startup, the
/// password exchange, the server's parameters and ReadyForQuery (what a consumer pays at each start).
double pgConnects(int port, const std::string& password, int n) {
  std::string conninfo = fmt::format(
      "host=127.0.0.1 port={} user=postgres password={} dbname=postgres gssencmode=disable sslmode=disable", port,
      password);
  return timeIt(n, [&] {
    PGconn* c = PQconnectdb(conninfo.c_str());
    if (PQstatus(c) != CONNECTION_OK) {
      fmt::print(stderr, "connect: {}\n", PQerrorMessage(c));
      std::exit(2);
    }
    PQfinish(c);
  });
}

double valkeyRoundTrips(int port, const std::string& password, int n) {
  redisContext* c = redisConnect("127.0.0.1", port);
  if (!c || c->err) std::exit(2);
  freeReplyObject(redisCommand(c, "AUTH %s", password.c_str()));
  double us = timeIt(n, [&] { freeReplyObject(redisCommand(c, "PING")); });
  redisFree(c);
  return us;
}

} // namespace

int main(int argc, char** argv) {
  idem::Cleanup::installSignalHandlers();
  int n = argc > 1 ? std::atoi(argv[1]) : 5000;
  auto servers = idem::EmbeddedServers::start();
  const auto& ep = servers->endpoints();
  Counting listener;
  idem::proxy::Hub hub({ep.pg_host, ep.pg_port}, {ep.valkey_host, ep.valkey_port}, listener);
  auto ports = hub.open(1);
  // A second hub whose I/O thread shares one CPU with the client (the thread that creates a hub's thread
  // passes its CPU mask on): the same round trips without a wake-up across CPUs between client and proxy.
  // On a VM, waking a thread on an idle virtual CPU costs tens of microseconds, the proxy's hops included.
  cpu_set_t all, one;
  ::sched_getaffinity(0, sizeof all, &all);
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &all)) {
      CPU_SET(c, &one);
      break;
    }
  ::sched_setaffinity(0, sizeof one, &one);
  idem::proxy::Hub pinnedHub({ep.pg_host, ep.pg_port}, {ep.valkey_host, ep.valkey_port}, listener);
  auto pinned = pinnedHub.open(1);
  ::sched_setaffinity(0, sizeof all, &all);
  auto onOneCpu = [&](auto fn) {
    ::sched_setaffinity(0, sizeof one, &one);
    double us = fn();
    ::sched_setaffinity(0, sizeof all, &all);
    return us;
  };

  fmt::print("round trips per measurement: {} (medians, microseconds)\n", n);
  fmt::print("{:<28} {:>10} {:>12} {:>10} {:>8}\n", "", "direct", "via proxy", "added", "ratio");
  // Interleave direct and proxied measurements so that machine noise hits both alike.
  std::vector<double> pd, pp, vd, vp, cd, cp, p1d, p1p, v1d, v1p;
  const int connects = std::max(20, n / 20);
  for (int round = 0; round < 3; ++round) {
    cd.push_back(pgConnects(ep.pg_port, ep.pg_password, connects));
    cp.push_back(pgConnects(ports.pg, ep.pg_password, connects));
    pd.push_back(pgRoundTrips(ep.pg_port, ep.pg_password, n));
    pp.push_back(pgRoundTrips(ports.pg, ep.pg_password, n));
    vd.push_back(valkeyRoundTrips(ep.valkey_port, ep.valkey_password, n));
    vp.push_back(valkeyRoundTrips(ports.broker, ep.valkey_password, n));
    p1d.push_back(onOneCpu([&] { return pgRoundTrips(ep.pg_port, ep.pg_password, n); }));
    p1p.push_back(onOneCpu([&] { return pgRoundTrips(pinned.pg, ep.pg_password, n); }));
    v1d.push_back(onOneCpu([&] { return valkeyRoundTrips(ep.valkey_port, ep.valkey_password, n); }));
    v1p.push_back(onOneCpu([&] { return valkeyRoundTrips(pinned.broker, ep.valkey_password, n); }));
  }
  auto row = [](const char* what, double d, double p) {
    fmt::print("{:<28} {:>10.1f} {:>12.1f} {:>10.1f} {:>7.2f}x\n", what, d, p, p - d, p / d);
  };
  row("PostgreSQL SELECT 1", median(pd), median(pp));
  row("Valkey PING", median(vd), median(vp));
  row("PostgreSQL connection", median(cd), median(cp));
  fmt::print("client and proxy thread on one CPU (the servers free):\n");
  row("PostgreSQL SELECT 1", median(p1d), median(p1p));
  row("Valkey PING", median(v1d), median(v1p));
  fmt::print("steps observed by the proxies: {}\n", listener.steps);
  hub.close(1);
  pinnedHub.close(1);
  return 0;
}
