#include "supervisor/processes.h"

#include "supervisor/escapes.h"

#include "core/error.h"

#include <cerrno>
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
  ChildSpec spec = ws_.targetSpec(out.ports, p.label, runTag_, baseEnv_, std::move(vars), logCap, role, p.argv);
  try {
    p.child = Child::spawn(spec);
  } catch (const SpawnError& e) {
    hub_.close(p.owner);
    throw UsageError(e.what());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    owners_[p.owner] = p.child.pid();
  }
  ctl_.setPid(p.owner, p.child.pid());
  out.execed = ws_.phase("spawn", t);
  h_.append(p.label, ops::Spawn{p.child.pid(), consumer, spec.log.string(), why});
  groups_.insert(p.child.pid()); // its process group (pgid == pid)
  return out;
}

void TargetProcesses::ended(const TargetProcess& p, const ExitStatus& es, const char* by) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_.erase(p.owner);
  }
  h_.append(p.label, exitOf(es, by));
}

namespace {
/// The least grace after which a process SIGKILLed at its end is said to have ignored its SIGTERM.
constexpr std::chrono::milliseconds kGraceToJudgeSigterm{500};
} // namespace

ExitStatus TargetProcesses::stop(TargetProcess& p, std::chrono::milliseconds grace) {
  // A stopped group would hold its SIGTERM until the grace ran out and be SIGKILLed for it.
  ctl_.setStopping(p.owner); // what it sends from now on is its shutdown: no fault point
  if (continueGroup(p.owner)) h_.append(p.label, ops::Note{"woken (SIGCONT) from its pause before it is stopped"});
  auto es = p.child.stop(grace);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_.erase(p.owner);
  }
  auto e = exitOf(es, "harness");
  // Ignored only if it had time to act on it: at a deadline the grace is what is left of it, down to nothing,
  // and a SIGKILL then says nothing of how the process handles SIGTERM.
  e.ignoredSigterm = es.signal == SIGKILL && grace >= kGraceToJudgeSigterm;
  h_.append(p.label, e);
  return es;
}

int TargetProcesses::stopGroup(int owner) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = owners_.find(owner);
  if (it == owners_.end() || it->second <= 0) return ESRCH;
  if (::killpg(it->second, SIGSTOP) != 0) return errno;
  stopped_.insert(owner);
  return 0;
}

bool TargetProcesses::continueGroup(int owner) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!stopped_.erase(owner)) return false;
  auto it = owners_.find(owner);
  if (it != owners_.end()) ::killpg(it->second, SIGCONT);
  return true;
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
