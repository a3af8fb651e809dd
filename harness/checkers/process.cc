#include "checkers/detail.h"
#include "plan/fault_kind.h"

#include <fmt/format.h>

#include <csignal>
#include <set>

namespace idem::detail {

namespace {

std::string signalName(int sig) {
  switch (sig) {
  case SIGKILL: return "SIGKILL";
  case SIGTERM: return "SIGTERM";
  case SIGSEGV: return "SIGSEGV";
  case SIGABRT: return "SIGABRT";
  case SIGBUS: return "SIGBUS";
  case SIGFPE: return "SIGFPE";
  case SIGILL: return "SIGILL";
  case SIGINT: return "SIGINT";
  case SIGPIPE: return "SIGPIPE";
  case SIGHUP: return "SIGHUP";
  default: return "";
  }
}

} // namespace

CheckResult checkProcesses(const HistoryView& h) {
  // Processes a fault other than a kill reached (a dropped connection, an error reply, a delay past its
  // own timeout): exiting on the error it saw is a way to handle it — the harness restarts it — not a crash.
  // A server restart reaches every process alive then.
  // A forget or a rebalance tells the waiting process nothing itself, but the broker may tell it afterwards:
  // NATS answers a pull on the durable made anew 409, Kafka a commit of a member taken out UNKNOWN_MEMBER_ID.
  // A process that got an error from its broker after one of them fired lived through it too.
  std::set<std::string> faulted, alive;
  bool brokerTold = false;
  for (const Op& op : h.ops) {
    if (op.as<ops::Spawn>()) alive.insert(op.process);
    else if (op.as<ops::Exit>()) alive.erase(op.process);
    else if (const auto* f = op.as<ops::FaultOp>(); f && f->fault.kind == "restart") faulted.insert(alive.begin(), alive.end());
    else if (f && (f->fault.kind == "forget" || f->fault.kind == "rebalance")) brokerTold = true;
    else if (f && !f->fault.isKill() && faultKind(f->fault.kind, "fault").leavesAftermath()) faulted.insert(op.process);
    else if (const auto* s = op.as<ops::Step>(); s && brokerTold && s->error && s->server != "pg" && s->server != "sink")
      faulted.insert(op.process);
    // A broker's error while its group's membership changed (a Kafka member joining or leaving: several
    // consumers at once, or one replaced, no fault needed): the client may retry it, or exit on it.
    else if (const auto* s = op.as<ops::Step>(); s && s->error && s->transient)
      faulted.insert(op.process);
    // A serialization failure or a deadlock the server itself reported (several consumers at once, no fault
    // needed): the transient errors a consumer is told to retry, or exit on and be restarted.
    else if (const auto* s = op.as<ops::Step>(); s && s->error && s->server == "pg" &&
             (s->summary.find("could not serialize access") != std::string::npos ||
              s->summary.find("deadlock detected") != std::string::npos))
      faulted.insert(op.process);
  }
  std::vector<Violation> out;
  for (const auto& e : h.exits) {
    // An HTTP server that could not bind its PORT because another process had it: replaced on another port.
    if (e.by == "port-taken") continue;
    std::string status;
    if (e.signal) {
      std::set<int> sent = {SIGTERM, SIGKILL}; // the harness stops with SIGTERM, then SIGKILL
      for (const auto& k : h.kills) {
        if (k.process == e.process) sent.insert(k.signal);
      }
      if (e.by == "harness" && sent.count(*e.signal)) continue;
      std::string name = signalName(*e.signal);
      status = name.empty() ? fmt::format("signal {}", *e.signal) : fmt::format("signal {} ({})", *e.signal, name);
    } else {
      if (e.by != "self" || e.status.value_or(0) == 0 || faulted.count(e.process)) continue;
      status = fmt::format("exit {}", *e.status);
    }
    Violation v;
    v.kind = "crash";
    v.invariant = "process";
    v.key = e.process;
    v.observed = status;
    v.ops.push_back(e.op);
    auto log = h.logs.find(e.process);
    std::string where = log != h.logs.end() && !log->second.empty() ? fmt::format(" (log {})", log->second) : "";
    v.message = fmt::format("{} crashed: {}{}", e.process, status, where);
    out.push_back(std::move(v));
  }
  // A process a consumer started that outlived every consumer process of the run (it left their process
  // groups): the harness killed it; the target breaks the contract (docs/target-contract.md).
  for (const auto& [op, esc] : recordsOf<ops::Escape>(h.ops)) {
    Violation v;
    v.kind = "escaped";
    v.invariant = "process";
    v.key = op->process;
    v.observed = esc->command;
    v.ops.push_back(op->index);
    v.message = fmt::format("a process {} started (pid {}: {}) was still running after every consumer process "
                            "had stopped: it left the consumer's process group, so killing the consumer does not "
                            "stop it; idemproof killed it (docs/target-contract.md)",
                            op->process, esc->pid, esc->command);
    out.push_back(std::move(v));
  }
  return resultOf(std::move(out), {});
}

CheckResult checkRun(const std::vector<Op>& ops) {
  std::vector<std::string> errors;
  size_t planned = 0, sent = 0;
  if (auto plans = recordsOf<ops::Plan>(ops); !plans.empty()) planned = plans.front().second->schedule.stream.size();
  sent = recordsOf<ops::Send>(ops).size();
  if (sent < planned)
    errors.push_back(fmt::format("the producer sent {} of the {} stream entries the schedule holds", sent, planned));
  for (const auto& [op, e] : recordsOf<ops::Error>(ops))
    errors.push_back(fmt::format("the run could not be judged: {}", e->message));
  return resultOf({}, errors);
}

} // namespace idem::detail
