#include "supervisor/processes.h"

#include "supervisor/escapes.h"

#include "core/error.h"

#include <csignal>

namespace idem {

TargetProcesses::TargetProcesses(Workspace::Impl& ws, History& h, Controller& ctl, proxy::Hub& hub)
    : ws_(ws), h_(h), ctl_(ctl), hub_(hub), baseEnv_(currentEnvironment()), runTag_(nextRunTag()) {}

TargetProcesses::Started TargetProcesses::start(TargetProcess& p, const std::string& consumer,
                                                std::map<std::string, std::string> vars, size_t logCap,
                                                const char* role, const char* why) {
  auto t = Clock::now();
  Started out;
  out.ports = hub_.open(p.owner);
  t = ws_.phase("proxies", t);
  ChildSpec spec = ws_.targetSpec(out.ports, p.label, runTag_, baseEnv_, std::move(vars), logCap, role);
  try {
    p.child = Child::spawn(spec);
  } catch (const SpawnError& e) {
    hub_.close(p.owner);
    throw UsageError(e.what());
  }
  ctl_.setPid(p.owner, p.child.pid());
  out.execed = ws_.phase("spawn", t);
  h_.append(p.label, ops::Spawn{p.child.pid(), consumer, spec.log.string(), why});
  groups_.insert(p.child.pid()); // its process group (pgid == pid)
  return out;
}

void TargetProcesses::ended(const TargetProcess& p, const ExitStatus& es, const char* by) {
  h_.append(p.label, exitOf(es, by));
}

ExitStatus TargetProcesses::stop(TargetProcess& p, std::chrono::milliseconds grace) {
  auto es = p.child.stop(grace);
  auto e = exitOf(es, "harness");
  e.ignoredSigterm = es.signal == SIGKILL;
  h_.append(p.label, e);
  return es;
}

void TargetProcesses::reapEscaped() { idem::reapEscaped(h_, runTag_, groups_); }

ops::Exit TargetProcesses::exitOf(const ExitStatus& es, const char* by) {
  ops::Exit e;
  if (es.signal) e.signal = es.signal;
  else e.status = es.code;
  e.by = by;
  return e;
}

} // namespace idem
