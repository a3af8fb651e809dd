/// The consumer processes of one schedule: start them behind the proxies, notice kills and exits,
/// restart while work remains, release later phases of the producer once everything before is acked,
/// and stop at completion, at a stall or at the deadline. Never judges: it only records.
#include "supervisor/controller.h"
#include "supervisor/workspace_impl.h"

#include "core/error.h"
#include "core/process.h"

#include <fmt/format.h>

#include <csignal>
#include <thread>

extern char** environ;

namespace idem {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Proc {
  int owner = 0;
  std::string label;    ///< unique per process: c1, c2, ...
  std::string consumer; ///< CONSUMER given to it (same as an earlier label on a same-name restart)
  Child child;
};

std::map<std::string, std::string> currentEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

nlohmann::json exitJson(const ExitStatus& es, const char* by) {
  nlohmann::json j{{"by", by}};
  if (es.signal) j["signal"] = es.signal;
  else j["status"] = es.code;
  return j;
}

} // namespace

void Workspace::Impl::runConsumers(History& h, const Schedule& s,
                                   const std::map<int, std::map<std::string, std::string>>& fields) {
  std::error_code ec;
  for (const auto& p : std::filesystem::directory_iterator(logDir, ec)) std::filesystem::remove_all(p.path(), ec);

  Controller ctl(h, s.kills);
  proxy::Hub hub({servers.pg_host, servers.pg_port}, {servers.valkey_host, servers.valkey_port}, ctl);
  ctl.setHub(&hub);
  const auto baseEnv = currentEnvironment();
  const auto started = Clock::now();

  int phase = 0;
  const int phases = s.phases();
  std::string lastSent;
  auto nextPhase = [&] {
    while (phase < phases) {
      std::string last = send(h, s, fields, ++phase);
      if (!last.empty()) {
        lastSent = last;
        return;
      }
    }
  };
  nextPhase();

  std::optional<Proc> cur;
  int nproc = 0;
  auto spawn = [&](const std::string& consumer, const char* why) {
    Proc p;
    p.owner = ++nproc;
    p.label = fmt::format("c{}", nproc);
    p.consumer = consumer.empty() ? p.label : consumer;
    ctl.addProcess(p.owner, p.label);
    auto ports = hub.open(p.owner);
    std::map<std::string, std::string> vars{
        {"DATABASE_URL", pgUrl(servers, "127.0.0.1", ports.pg, database, urlQuery)},
        {"VALKEY_URL", servers.valkey_password.empty()
                           ? fmt::format("redis://127.0.0.1:{}/{}", ports.valkey, valkeyDb)
                           : fmt::format("redis://:{}@127.0.0.1:{}/{}", servers.valkey_password, ports.valkey, valkeyDb)},
        {"STREAM", stream},
        {"GROUP", group},
        {"CONSUMER", p.consumer},
        {"CLAIM_IDLE_MS", std::to_string(options.claim_idle_ms)}};
    vars["REDIS_URL"] = vars["VALKEY_URL"];
    ChildSpec spec;
    spec.env = baseEnv;
    for (const auto& [k, v] : vars) spec.env[k] = v;
    auto lookup = spec.env;
    for (const auto& [k, v] : target.env)
      spec.env[k] = expandVars(v, lookup, fmt::format("{}: field 'env.{}'", target.manifest.string(), k));
    spec.argv = target.command;
    if (spec.argv[0].find('/') != std::string::npos && spec.argv[0][0] != '/')
      spec.argv[0] = (target.dir / spec.argv[0]).lexically_normal().string();
    spec.cwd = target.dir;
    spec.log = logDir / (p.label + ".log");
    spec.what = fmt::format("consumer {} of target '{}' ({})", p.label, target.name, target.manifest.string());
    try {
      p.child = Child::spawn(spec);
    } catch (const SpawnError& e) {
      hub.close(p.owner);
      throw UsageError(e.what());
    }
    ctl.setPid(p.owner, p.child.pid());
    h.append("spawn", p.label,
             {{"pid", p.child.pid()}, {"consumer", p.consumer}, {"log", spec.log.string()}, {"restart", why}});
    cur = std::move(p);
  };

  auto idle = [&](const Proc& p) {
    auto st = ctl.state(p.owner);
    if (st.inflight > 0) return st.inflight == st.inflightBlocking;
    return Clock::now() - st.lastActivity >= options.settle;
  };

  spawn("", "first");
  BrokerState lastBroker = broker();
  auto lastProgress = Clock::now();
  bool stallRestarted = false;
  bool deadline = false;
  uint64_t seen = 0;
  bool anySteps = false;

  auto lastPoll = Clock::now();
  while (true) {
    uint64_t before = seen;
    seen = ctl.waitForActivity(seen, milliseconds(2));
    auto now = Clock::now();
    // The broker only changes through the consumers' steps (which wake us) or by time (idle, stall):
    // ask it after activity, or every 10 ms.
    bool pollBroker = seen != before || now - lastPoll >= milliseconds(10);
    if (now - started > options.deadline) {
      deadline = true;
      h.append("note", "harness", {{"message", fmt::format("deadline of {} ms reached", options.deadline.count())}});
      break;
    }
    if (cur) {
      auto st = ctl.state(cur->owner);
      anySteps = anySteps || st.steps > 0;
      if (st.killed) {
        auto es = cur->child.waitFor(milliseconds(5000));
        if (!es) es = cur->child.stop(milliseconds(0));
        h.append("exit", cur->label, exitJson(*es, "harness"));
        hub.close(cur->owner);
        std::string consumer = s.restart == RestartStyle::SameName ? cur->consumer : "";
        cur.reset();
        if (nproc >= options.max_processes) {
          h.append("note", "harness", {{"message", fmt::format("restart bound of {} processes reached", nproc)}});
          break;
        }
        std::this_thread::sleep_for(milliseconds(options.claim_idle_ms + 1));
        spawn(consumer, s.restart == RestartStyle::SameName ? "same-name" : "new-name");
        continue;
      }
      if (auto es = cur->child.poll()) {
        h.append("exit", cur->label, exitJson(*es, "self"));
        hub.close(cur->owner);
        bool first = nproc == 1;
        cur.reset();
        if (first && st.steps == 0 && (es->code != 0 || es->signal != 0)) {
          throw UsageError(fmt::format("target '{}' cannot start: c1 exited ({}) before any request reached a server; "
                                       "see {}", target.name, es->str(), (logDir / "c1.log").string()));
        }
        if (nproc >= options.max_processes) {
          h.append("note", "harness", {{"message", fmt::format("restart bound of {} processes reached", nproc)}});
          break;
        }
        spawn("", "after-exit");
        continue;
      }
    }
    if (!pollBroker) continue;
    lastPoll = now;
    BrokerState b = broker();
    if (b != lastBroker) {
      lastBroker = b;
      lastProgress = now;
      stallRestarted = false;
    }
    bool phaseDone = b.pending == 0 && compareIds(b.lastDelivered, lastSent) >= 0;
    if (phaseDone && (!cur || idle(*cur))) {
      if (phase < phases) {
        nextPhase();
        lastProgress = Clock::now();
        continue;
      }
      break;
    }
    if (now - lastProgress > options.stall) {
      if (!anySteps) {
        throw UsageError(fmt::format("target '{}' made no request to PostgreSQL or Valkey within {} ms; see {}",
                                     target.name, options.stall.count(), (logDir / "c1.log").string()));
      }
      h.append("stall", "harness", {{"pending", b.pending}, {"last_delivered", b.lastDelivered},
                                    {"restart", !stallRestarted}});
      if (stallRestarted || nproc >= options.max_processes) break;
      stallRestarted = true;
      if (cur) {
        auto es = cur->child.stop(options.grace);
        h.append("exit", cur->label, exitJson(es, "harness"));
        hub.close(cur->owner);
        cur.reset();
      }
      spawn("", "after-stall");
      lastProgress = Clock::now();
    }
  }

  if (cur) {
    auto es = cur->child.stop(options.grace);
    auto j = exitJson(es, "harness");
    if (es.signal == SIGKILL) j["ignored_sigterm"] = true;
    h.append("exit", cur->label, j);
    hub.close(cur->owner);
    cur.reset();
  }
  h.append("final", "harness", finalState(deadline));
}

} // namespace idem
