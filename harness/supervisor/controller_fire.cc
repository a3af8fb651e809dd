/// Controller::fire: what a fault does at its step, by the action its kind's Effect names — a kill of the
/// process group, a cut connection, an error answer, a delay, a hold, a pause, a newcomer joining, or a
/// server action the supervisor carries out while the step waits. The rest of the Controller is in
/// controller.cc and controller_holds.cc.
#include "supervisor/controller.h"

#include "history/trace.h"
#include "plan/fault_kind.h"
#include "proxy/errors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <utility>

namespace idem {

proxy::Decision Controller::fire(std::unique_lock<std::mutex>& lock, int owner, const Fault& fault, ops::Step step,
                                 proxy::Server server, const proxy::StepToken& token, bool flushed) {
  const bool before = fault.when == When::Before;
  const FaultKind& kind = faultKind(fault.kind, "fault");
  if (!fault.isKill() && kind.leavesAftermath() && states_[owner].faulted.empty()) states_[owner].faulted = fault.str();
  Effect effect = kind.effect(fault);
  if (effect.action == Effect::Action::Error && effect.code.empty()) {
    // The step's server's transient error: a broker whose answers depend on the request says which.
    const bool byRequest = server == proxy::Server::Broker && hub_ && hub_->broker().defaultError;
    effect = byRequest ? errorEffect(hub_->broker().defaultError(step.verb))
                       : defaultError(serverName(server), fault.when, step.verb, !step.tables.empty(), step.detail);
  }
  const std::string& name = names_[owner];
  proxy::Decision d;
  switch (effect.action) {
  case Effect::Action::Kill: {
    int err = killGroup(lock, owner);
    auto& st = states_[owner];
    st.killed = true; // its connections are cut either way: the supervisor must reap and replace it
    d.kind = proxy::Decision::Kind::Kill;
    if (err == 0) st.killPoint = fault.str();
    // No signal reached the process (killpg failed, no process id): the fault did not fire, and the step
    // ends as the proxy cut it.
    step.outcome = err != 0 ? (before ? ops::StepOutcome::Withheld : ops::StepOutcome::Forwarded)
                            : (before ? ops::StepOutcome::KilledBefore : ops::StepOutcome::KilledAfter);
    history_.append(name, std::move(step));
    // Its other steps in flight end with this cut: recorded before the kill, so that whatever reached a
    // server before the kill is before it in the history too (a statement forwarded on another connection).
    cutOthers(owner, token);
    if (err != 0)
      history_.append(name, ops::Note{fmt::format("kill point {} was reached but no signal was delivered: {}",
                                                  fault.str(), pids_.count(owner) ? std::strerror(err)
                                                                                  : "no process id yet")});
    else
      history_.append(name, ops::FaultOp{fault, SIGKILL});
    return d;
  }
  case Effect::Action::Drop:
    d.kind = proxy::Decision::Kind::Drop;
    step.outcome = before ? ops::StepOutcome::DroppedBefore : ops::StepOutcome::DroppedAfter;
    states_[owner].cutAt = pointText(step.verb, step.k, step.server);
    break;
  case Effect::Action::Error: {
    const std::string& here = serverName(server);
    std::string why;
    if (effect.server != here)
      why = fmt::format("{} is a {} error and {} is a {} step", effect.code,
                        serverTitle(effect.server), step.verb, serverTitle(here));
    else if (flushed)
      why = "the step is an extended-protocol group ended by Flush, whose error reply the proxy can't stand in for";
    else if (step.inMulti)
      why = "the step is part of a Valkey transaction (MULTI, a queued command, DISCARD), whose replies decide what "
            "the server's transaction holds: an error in the server's place would leave it other than the client is "
            "told (an EXEC takes one)";
    if (!why.empty()) {
      // Not applied: the step goes on as if there were no fault (reported as a fault that never fired).
      history_.append(name, ops::Note{fmt::format("fault {} not applied: {}", fault.str(), why)});
      return d;
    }
    step.error = true;
    step.summary = effect.code + " " + effect.message;
    history_.append(name, ops::FaultOp{fault, 0});
    if (server == proxy::Server::Broker && hub_ && hub_->broker().errorAnswer) {
      // The broker's own answer to this request with the code (the hub builds it from the request's bytes).
      d.kind = proxy::Decision::Kind::Answer;
      d.brokerError = effect.code;
      // An answer that ends the connection (AMQP's connection.close): the client reconnects on its own.
      if (hub_->broker().errorEndsConnection) states_[owner].cutAt = pointText(step.verb, step.k, step.server);
      step.outcome = ops::StepOutcome::Answered;
      history_.append(name, std::move(step));
      return d;
    }
    if (server == proxy::Server::Valkey && step.verb == "EXEC") {
      // An EXEC refused (EXECABORT, as a server answers once a queued command was refused) ends the
      // transaction unrun: the server is sent a DISCARD in its place, and its reply is answered with the error.
      d.kind = proxy::Decision::Kind::Replace;
      d.answer = proxy::respCommand({"DISCARD"});
      replyStandIn_ = proxy::errorReply(server, "EXECABORT", "Transaction discarded because of previous errors.");
      return d;
    }
    if (server == proxy::Server::Pg && !effect.fatal) {
      d.kind = proxy::Decision::Kind::Replace;
      if (step.verb == "COMMIT" || step.verb == "END") {
        // A COMMIT that fails ends its transaction: the server rolls back and is idle. The server is sent a
        // ROLLBACK in its place, and its reply is answered with the error (ReadyForQuery 'I').
        d.answer = proxy::pgQuery("ROLLBACK");
        replyStandIn_ = proxy::errorReply(server, effect.code, effect.message, 'I');
        return d;
      }
      // The server raises the error itself (its transaction state is then what the client is told: aborted
      // inside a transaction block); the step ends with the server's reply, recorded as answered.
      d.answer = proxy::pgRaiseQuery(effect.code, effect.message);
      return d;
    }
    d.kind = proxy::Decision::Kind::Answer;
    d.answer = proxy::errorReply(server, effect.code, effect.message, 'I', effect.fatal);
    d.close = effect.fatal;
    if (effect.fatal) states_[owner].cutAt = pointText(step.verb, step.k, step.server);
    step.outcome = ops::StepOutcome::Answered;
    history_.append(name, std::move(step));
    return d;
  }
  case Effect::Action::Hold: {
    // Released when another process reaches `until`, after `time`, or by the supervisor (releaseHold).
    // "c2:after:XACK#1" is a point of the fault text form: parsed as one (process, moment, verb, k).
    std::optional<Fault> until;
    if (!effect.until.empty()) until = Fault::parse(effect.until, fault.str());
    if (until) { // already passed? Then there is nothing to wait for.
      const auto& counts = until->when == When::After ? processReplies_ : processCounts_;
      auto it = counts.find({until->process, until->verb});
      if (it != counts.end() && it->second >= until->k) {
        history_.append(name, ops::FaultOp{fault, 0});
        history_.append(name, ops::Note{fmt::format("hold {} released at once: {} had passed {}", fault.str(),
                                                    until->process, until->point())});
        return d;
      }
    }
    d.kind = proxy::Decision::Kind::Hold;
    d.hold = effect.time;
    holds_.push_back(ActiveHold{token, fault, name, until, Clock::now()});
    history_.append(name, ops::FaultOp{fault, 0});
    return d;
  }
  case Effect::Action::Pause: {
    // Stopped now, woken (SIGCONT) by the release: another process's point (reached), its time or a hold's
    // bounds (the supervisor's releaseHold), or the step's end (holdEnded).
    std::optional<Fault> until;
    if (!effect.until.empty()) until = Fault::parse(effect.until, fault.str());
    if (until) {
      const auto& counts = until->when == When::After ? processReplies_ : processCounts_;
      auto it = counts.find({until->process, until->verb});
      if (it != counts.end() && it->second >= until->k) {
        history_.append(name, ops::FaultOp{fault, 0});
        history_.append(name, ops::Note{fmt::format("pause {} released at once: {} had passed {}", fault.str(),
                                                    until->process, until->point())});
        return d;
      }
    }
    pidCv_.wait_for(lock, std::chrono::seconds(5), [&] { return pids_.count(owner) > 0; });
    const int err = signals_ ? signals_->stopGroup(owner) : ESRCH;
    if (err != 0) {
      // No process stopped: the fault did not fire, and the step goes on.
      history_.append(name, ops::Note{fmt::format("pause point {} was reached but no signal was delivered: {}",
                                                  fault.str(), std::strerror(err))});
      return d;
    }
    d.kind = proxy::Decision::Kind::Hold; // no timer of the proxy's: the group must be woken first
    holds_.push_back(ActiveHold{token, fault, name, until, Clock::now(), false, owner, true});
    history_.append(name, ops::FaultOp{fault, SIGSTOP});
    return d;
  }
  case Effect::Action::Join:
    // The supervisor starts the newcomer (it looks at the active holds) and releases the step.
    d.kind = proxy::Decision::Kind::Hold;
    holds_.push_back(ActiveHold{token, fault, name, std::nullopt, Clock::now(), true, owner});
    outOfGroup_[owner]; // from now on its requests to the broker wait too (onRequest)
    history_.append(name, ops::FaultOp{fault, 0});
    return d;
  case Effect::Action::Forget:
  case Effect::Action::Age:
  case Effect::Action::Restart:
    // The harness acts on a server while the step waits (takeServerActions); recorded when done. A restart
    // reaches every live process: each lives on with its connections gone.
    if (effect.action == Effect::Action::Restart)
      for (auto& [o, st] : states_)
        if (st.faulted.empty() && !st.killed) st.faulted = fault.str();
    d.kind = proxy::Decision::Kind::Hold;
    serverActions_.push_back(ServerAction{fault, name, token});
    return d;
  case Effect::Action::Delay:
    // The step goes on after the delay: it is recorded when it ends, as any other.
    d.kind = proxy::Decision::Kind::Hold;
    d.hold = effect.time;
    delayed_[token.id] = Clock::now() + effect.time;
    history_.append(name, ops::FaultOp{fault, 0});
    return d;
  }
  history_.append(name, std::move(step));
  history_.append(name, ops::FaultOp{fault, 0});
  return d;
}

} // namespace idem
