/// The Controller (controller.h): counts and records every step, decides what happens to it (a fault,
/// the gate, a hold) and keeps each process's state for the supervisor. The holds and their release are in
/// controller_holds.cc, what a fault does at its step in controller_fire.cc, what the supervisor reads of
/// it in controller_views.cc.
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

namespace {

/// The process does not wait on the step's reply to go on with its work: a blocking read, a keep-alive.
bool passive(const proxy::StepInfo& step) { return step.blocking || step.keepAlive; }

/// One more (`delta` 1) or one fewer (-1) request of the process in flight, counted by what it is.
void countInflight(Controller::ProcessState& st, const proxy::StepInfo& step, int delta) {
  st.inflight += delta;
  if (passive(step)) st.inflightBlocking += delta;
  if (step.keepAlive) st.inflightKeepAlive += delta;
}

/// The process handed these entries back (or its server took them back): those it held are no work of its own.
void handBack(Controller::ProcessState& st, const std::vector<std::string>& ids) {
  for (const auto& id : ids)
    if (st.held.count(id)) st.returned.insert(id);
}

} // namespace

const std::string& Controller::serverName(proxy::Server s) const {
  static const std::string pg = "pg", valkey = "valkey";
  if (hub_) return hub_->name(s);
  return s == proxy::Server::Pg ? pg : valkey;
}

Controller::Controller(History& history, std::vector<Fault> faults)
    : history_(history), faults_(std::move(faults)) {}

void Controller::addProcess(int owner, std::string name) {
  std::lock_guard<std::mutex> lock(mu_);
  names_[owner] = std::move(name);
  auto& st = states_[owner];
  st.lastActivity = st.spawned = Clock::now();
}

void Controller::setStarting(int owner, bool starting) {
  std::lock_guard<std::mutex> lock(mu_);
  if (starting) starting_.insert(owner);
  else starting_.erase(owner);
}

void Controller::setStopping(int owner) {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_.insert(owner);
}

void Controller::setPid(int owner, pid_t pgid) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pids_[owner] = pgid;
  }
  pidCv_.notify_all();
}

ops::Step Controller::stepOf(const Inflight& f) const {
  ops::Step s;
  s.server = serverName(f.server);
  s.conn = f.conn;
  s.verb = f.step.verb;
  s.k = f.k;
  s.detail = f.step.detail;
  s.tReqUs = f.t_req_us;
  s.acked = f.step.acked;
  s.returned = f.step.returned;
  s.discards = f.step.discards;
  s.unseen = f.step.unseen;
  s.script = f.step.script;
  s.scriptCalls = f.step.scriptCalls;
  s.scriptIds = f.step.scriptIds;
  s.deletesConsumer = f.step.deletesConsumer;
  s.flushed = f.step.flushed;
  s.inMulti = f.step.inMulti;
  s.blocking = f.step.blocking;
  s.setUp = f.setUp;
  s.stopping = f.stopping;
  s.tables = f.step.tables;
  return s;
}

int Controller::killGroup(std::unique_lock<std::mutex>& lock, int owner) {
  // The process may have connected before spawn() handed its pid over: wait for it (it is set right after
  // fork returns, so this is microseconds).
  pidCv_.wait_for(lock, std::chrono::seconds(5), [&] { return pids_.count(owner) > 0; });
  auto it = pids_.find(owner);
  if (it == pids_.end() || it->second <= 0) return ESRCH;
  return ::killpg(it->second, SIGKILL) == 0 ? 0 : errno;
}

std::optional<Fault> Controller::takeFault(When when, const std::string& verb, int k, const std::string& process,
                                           int pk) {
  auto hit = std::find_if(faults_.begin(), faults_.end(), [&](const Fault& f) {
    return f.when == when && f.verb == verb &&
           (f.process.empty() ? f.k == k && !isRelayLabel(process) : f.process == process && f.k == pk);
  });
  if (hit == faults_.end()) return std::nullopt;
  Fault f = *hit;
  faults_.erase(hit);
  return f;
}

void Controller::endInflight(int owner, ProcessState& st, const Inflight& f) {
  countInflight(st, f.step, -1);
  st.waitingFor.clear();
  for (const auto& [id, g] : inflight_) { // ordered by token: the oldest non-blocking one left
    if (g.owner != owner || passive(g.step)) continue;
    st.waitingFor = pointText(g.step.verb, g.k, serverName(g.server));
    st.waitingSince = g.sent;
    break;
  }
}

proxy::Decision Controller::onConnect(int owner, proxy::Server server, int conn) {
  std::unique_lock<std::mutex> lock(mu_);
  if (starting_.count(owner)) return {}; // an HTTP server's start-up: no fault point, not counted (setStarting)
  // A relay's steps are numbered apart from the consumers' (fault.h): rN:VERB#k alone reaches them.
  const int k = ++counts_[isRelayLabel(names_[owner]) ? "relay/CONNECT" : "CONNECT"];
  const int pk = ++processCounts_[{names_[owner], "CONNECT"}];
  if (stopping_.count(owner)) return {}; // its shutdown: never a fault point (setStopping)
  auto fault = takeFault(When::Before, "CONNECT", k, names_[owner], pk);
  if (!fault) return {};
  ops::Step step;
  step.server = serverName(server);
  step.conn = conn;
  step.verb = "CONNECT";
  step.k = k;
  step.detail = "a new PostgreSQL connection";
  step.tReqUs = history_.nowUs();
  const Effect effect = faultKind(fault->kind, "fault").effect(*fault);
  const std::string& name = names_[owner];
  proxy::Decision d;
  if (effect.action == Effect::Action::Error) {
    if (!effect.code.empty() && effect.server != "pg") {
      history_.append(name, ops::Note{fmt::format("fault {} not applied: {} is not a PostgreSQL error", fault->str(),
                                                  effect.code)});
      return d;
    }
    // An error at startup always ends the session (the server sends FATAL and closes).
    const Effect e = effect.code.empty() ? defaultError("pg", When::Before, "CONNECT") : effect;
    d.kind = proxy::Decision::Kind::Answer;
    d.answer = proxy::errorReply(server, e.code, e.message, 'I', true);
    d.close = true;
    step.outcome = ops::StepOutcome::Answered;
    step.error = true;
    step.summary = e.code + " " + e.message;
    if (states_[owner].faulted.empty()) states_[owner].faulted = fault->str();
    states_[owner].cutAt = fmt::format("CONNECT#{} (pg)", k);
    history_.append(name, ops::FaultOp{*fault, 0});
    history_.append(name, std::move(step));
  } else if (effect.action == Effect::Action::Kill || effect.action == Effect::Action::Drop) {
    d = fire(lock, owner, *fault, std::move(step), server, proxy::StepToken{}, false);
  } else {
    history_.append(name, ops::Note{fmt::format("fault {} not applied: a connection being opened can be refused, "
                                                "reset or killed, not {}",
                                                fault->str(), fault->kind)});
    return d;
  }
  ++activity_;
  const bool cut = d.kind == proxy::Decision::Kind::Kill;
  lock.unlock();
  if (cut && hub_) hub_->cutNow(owner);
  cv_.notify_all();
  return d;
}

proxy::Decision Controller::onRequest(int owner, proxy::Server server, int conn, const proxy::StepInfo& step,
                                      proxy::StepToken& token) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto now = Clock::now();
  // Connection set-up (history/trace.h setUpCommand: AUTH, SELECT, HELLO, CLIENT SETNAME, a first INFO or
  // PING, a driver's SET): numbered apart, so that it never shifts the count of the target's own steps (a SQL
  // SELECT#1 is the first SQL SELECT), and never a fault point nor a hold's release point.
  bool& worked = connectionWorked_[{owner, static_cast<int>(server), conn}];
  const bool setUp = setUpCommand(serverName(server), step.verb, step.detail, worked) || starting_.count(owner) > 0;
  worked = worked || !setUp;
  const std::string counted = stepCounter(step.verb, setUp);
  const bool relay = isRelayLabel(names_[owner]);
  Inflight f{owner, server, conn, step, ++counts_[relay ? "relay/" + counted : counted], history_.nowUs(), now,
             ++processCounts_[{names_[owner], counted}], false, {}, setUp, stopping_.count(owner) > 0};
  auto& st = states_[owner];
  st.steps++;
  if (!st.firstRequest) st.firstRequest = now;
  st.lastActivity = now;
  st.lastWasEmptyRead = false;
  // A client reconnecting on its own replays its session's set-up (AUTH or HELLO, a prefetch, a declare):
  // still reconnecting, not working, until it reads or works again.
  if (!step.configures && !setUp) st.cutAt.clear();
  // A relay polls the outbox for as long as it lives: its steps are no consumer's work (the outbox query
  // tells when it is done: relay.cc).
  if (!step.read && !step.keepAlive && !relay) lastWork_ = st.lastWorkAt = now;
  else if (!step.blocking) st.lastPoll = now;
  for (const auto& id : step.acked) settledForGroup(id);
  handBack(st, step.returned);
  ++activity_;
  token.id = nextToken_++;
  auto released = setUp ? std::vector<proxy::StepToken>{} : reached(names_[owner], When::Before, step.verb, f.pk);
  proxy::Decision d;
  auto fault = setUp || f.stopping ? std::nullopt : takeFault(When::Before, step.verb, f.k, names_[owner], f.pk);
  if (fault) {
    ops::Step s = stepOf(f);
    // A delivery that settles itself (a no-ack push, whose acknowledgement is its own sending) was sent by
    // the broker, and is settled there, though a fault before it keeps it from the process.
    if (step.pushed && !step.acked.empty())
      for (const auto& id : step.acked) s.delivered.push_back({id, {}});
    d = fire(lock, owner, *fault, std::move(s), server, token, step.flushed);
  }
  const bool gateMatch = !setUp && !gateVerb_.empty() && step.verb == gateVerb_ && gateLeft_ != 0;
  if (gateMatch && gateSkip_ > 0) {
    --gateSkip_; // an earlier step of the verb than the one the gate waits for
  } else if (d.kind == proxy::Decision::Kind::Pass && gateMatch) {
    d.kind = proxy::Decision::Kind::Hold; // until openGate
    if (gateLeft_ > 0) --gateLeft_;
    gateHeld_.push_back(token.id);
    history_.append(names_[owner], ops::Note{fmt::format("{}#{} held before the server sees it: {}", step.verb, f.k, gateWhy_)});
  }
  if (auto out = outOfGroup_.find(owner);
      d.kind == proxy::Decision::Kind::Pass && server == proxy::Server::Broker && out != outOfGroup_.end()) {
    // Out of its group at a rebalance's step: silent to the broker (its heartbeats too) until the step goes
    // on, as a process whose batch outlasts the group's patience.
    d.kind = proxy::Decision::Kind::Hold;
    if (out->second.empty())
      history_.append(names_[owner], ops::Note{fmt::format("{}#{} held before the broker sees it: the process is out of "
                                                           "its group until its step goes on",
                                                           step.verb, f.k)});
    out->second.push_back(token);
  }
  if (d.kind == proxy::Decision::Kind::Pass && st.holdUntil && now < *st.holdUntil) {
    d.kind = proxy::Decision::Kind::Hold; // released by the proxy's timer
    d.hold = std::chrono::ceil<std::chrono::milliseconds>(*st.holdUntil - now);
    auto& rh = requestHolds_[owner];
    if (!std::exchange(rh.noted, true))
      history_.append(names_[owner], ops::Note{fmt::format("{}#{} held {} ms before the server sees it, as every request of "
                                                           "this process until then: {}",
                                                           step.verb, f.k, d.hold.count(), rh.why)});
  }
  f.answered = d.kind == proxy::Decision::Kind::Replace;
  f.replyStandIn = std::exchange(replyStandIn_, {});
  if (d.kind == proxy::Decision::Kind::Pass || d.kind == proxy::Decision::Kind::Hold ||
      d.kind == proxy::Decision::Kind::Replace) {
    // It goes to the server (now, or after a hold): a step in flight until its reply or a cut.
    auto& s = states_[owner];
    countInflight(s, step, 1);
    if (!passive(step) && s.waitingFor.empty()) {
      s.waitingFor = pointText(step.verb, f.k, serverName(server));
      s.waitingSince = now;
    }
    inflight_.emplace(token.id, std::move(f));
  }
  const bool cut = d.kind == proxy::Decision::Kind::Kill;
  lock.unlock();
  if (cut && hub_) hub_->cutNow(owner);
  releaseTokens(released);
  cv_.notify_all();
  return d;
}

proxy::Decision Controller::onReply(int owner, const proxy::StepToken& token, const proxy::ReplyInfo& reply) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = inflight_.find(token.id);
  if (it == inflight_.end()) return {};
  Inflight f = std::move(it->second);
  inflight_.erase(it);
  auto& st = states_[owner];
  endInflight(owner, st, f);
  const auto now = Clock::now();
  st.lastActivity = now;
  ++activity_;
  ops::Step s = stepOf(f);
  s.error = reply.error;
  s.transient = reply.error && reply.transient;
  s.unseenEntries = s.unseen && reply.mayCarryEntries;
  s.summary = reply.summary;
  if (!f.answered) { // the server's own answer, not a fault's
    auto& [times, latest] = st.refused[f.step.verb];
    times = reply.error ? times + 1 : 0;
    if (reply.error) latest = reply.summary;
  }
  if (f.answered) s.outcome = ops::StepOutcome::Answered; // the server ran idemproof's stand-in, not the request
  if (!f.replyStandIn.empty()) { // the stand-in's own reply is not what the client is told
    s.error = true;
    s.summary = "error instead of: " + reply.summary;
    history_.append(names_[owner], std::move(s));
    lock.unlock();
    cv_.notify_all();
    proxy::Decision d;
    d.kind = proxy::Decision::Kind::Answer;
    d.answer = std::move(f.replyStandIn);
    return d;
  }
  s.empty = reply.empty_read;
  s.claimedIds = reply.claimedIds;
  s.ranged = reply.ranged;
  for (const auto& e : reply.delivered) {
    ops::Delivered d{e.id, {}};
    for (const auto& [k, v] : e.fields) d.fields[k] = v;
    s.delivered.push_back(std::move(d));
    seenDelivered_.insert(e.id);
    if (!reply.error && reply.settles) { // acknowledged by its delivery (XREADGROUP … NOACK): no one holds it
      s.acked.push_back(e.id);
      settledForGroup(e.id);
    }
  }
  // A script may have acknowledged what it held (or claimed more) unseen: its holdings are no longer known.
  // What the broker still lists pending is what the end of the run waits for.
  if (s.unseen && !reply.error) {
    st.held.clear();
    st.returned.clear();
    st.handedAgain.clear();
    st.handedAgainSince.clear();
  }
  // Its acknowledgements reached the broker: now, before a fault after the step acts (a forget undoes them).
  if (!reply.error && !f.answered) ackedAtBroker_.insert(s.acked.begin(), s.acked.end());
  for (const auto& id : reply.reheld) ackedAtBroker_.erase(id); // read again after its acknowledgement: pending
  std::optional<Fault> fault = f.setUp || f.stopping ? std::nullopt : takeFault(When::After, f.step.verb, f.k, names_[owner], f.pk);
  proxy::Decision d;
  if (fault) d = fire(lock, owner, *fault, s, f.server, token, false);
  // A fault that took no action (a hold whose point was passed already, an error not applied, a pause that
  // stopped no process) leaves the reply to go on as if it had none: recorded, and what it tells counted.
  if (fault && d.kind != proxy::Decision::Kind::Pass) {
    if (d.kind == proxy::Decision::Kind::Hold) {
      // The reply reaches the process after the delay (onReleased): still in flight until then, counted as
      // before (onReleased ends it again, a blocking read included).
      countInflight(st, f.step, 1);
      heldReplies_[token.id] = HeldReply{std::move(f), std::move(s), reply};
    }
    const bool cut = d.kind == proxy::Decision::Kind::Kill;
    lock.unlock();
    if (cut && hub_) hub_->cutNow(owner);
    cv_.notify_all();
    return d;
  }
  holdEnded(token.id); // a held request whose time passed: its reply is here
  auto released = replied(owner, std::move(s), reply, f.setUp ? 0 : f.pk, f.step.keepAlive);
  lock.unlock();
  releaseTokens(released);
  cv_.notify_all();
  return {};
}

std::vector<proxy::StepToken> Controller::replied(int owner, ops::Step s, const proxy::ReplyInfo& reply, int pk,
                                                  bool keepAlive) {
  auto& st = states_[owner];
  const auto now = Clock::now();
  if (!reply.error) {
    bool fresh = false; // entries new to it: work; the ones it already holds handed back are none
    for (const auto& e : reply.delivered) {
      if (reply.stale) break; // delivered to a member its group no longer has: the group settles them
      st.gotEntries = true;
      // Settled by its own delivery (RabbitMQ's no-ack): work, which no one holds; not one read again (reheld).
      if (std::find(s.acked.begin(), s.acked.end(), e.id) != s.acked.end() &&
          std::find(reply.reheld.begin(), reply.reheld.end(), e.id) == reply.reheld.end()) {
        fresh = true;
        st.settledOnDelivery = true;
        st.lastWorkAt = now;
        continue;
      }
      if (ackedAtBroker_.count(e.id)) continue; // a copy the broker settles (ackedAtBroker_)
      st.returned.erase(e.id); // its own again
      if (st.held.insert(e.id).second) fresh = true;
      else if (st.handedAgain[e.id]++ == 0) st.handedAgainSince[e.id] = now;
    }
    if (fresh) lastWork_ = now;
    // A keep-alive's reply says nothing of its work; an empty read with only keep-alives in flight is one.
    if (!keepAlive) st.lastWasEmptyRead = reply.empty_read && st.inflight == st.inflightKeepAlive;
    if (reply.waiting) st.waiting = true;
  }
  // An error answer can hand entries back too (a closed channel): no longer its work.
  handBack(st, reply.returned);
  for (const auto& id : reply.returned)
    if (std::find(s.returned.begin(), s.returned.end(), id) == s.returned.end()) s.returned.push_back(id);
  if (s.outcome != ops::StepOutcome::Answered) s.outcome = ops::StepOutcome::Ok;
  const std::string verb = s.verb;
  history_.append(names_[owner], std::move(s));
  if (pk == 0) return {}; // a set-up step: no point of a hold
  return reached(names_[owner], When::After, verb, pk);
}

void Controller::onReleased(int owner, const proxy::StepToken& token) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = heldReplies_.find(token.id);
  if (it == heldReplies_.end()) return;
  HeldReply h = std::move(it->second);
  heldReplies_.erase(it);
  auto& st = states_[owner];
  endInflight(owner, st, h.f);
  st.lastActivity = Clock::now();
  ++activity_;
  holdEnded(token.id);
  auto released = replied(owner, std::move(h.step), h.reply, h.f.pk, h.f.step.keepAlive);
  lock.unlock();
  releaseTokens(released);
  cv_.notify_all();
}

void Controller::onCut(int owner, const proxy::StepToken& token, proxy::CutKind how) {
  std::unique_lock<std::mutex> lock(mu_);
  std::vector<proxy::StepToken> released;
  if (!cutStep(owner, token.id, how, released)) return;
  lock.unlock();
  releaseTokens(released);
  cv_.notify_all();
}

void Controller::onReturnedAtEnd(int owner, const std::vector<std::string>& entries) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    handBack(states_[owner], entries);
  }
  cv_.notify_all();
}

bool Controller::cutStep(int owner, int64_t token, proxy::CutKind how, std::vector<proxy::StepToken>& released) {
  Inflight f;
  if (auto held = heldReplies_.find(token); held != heldReplies_.end()) {
    f = std::move(held->second.f);
    heldReplies_.erase(held);
  } else if (auto it = inflight_.find(token); it != inflight_.end()) {
    f = std::move(it->second);
    inflight_.erase(it);
  } else {
    return false;
  }
  auto& st = states_[owner];
  endInflight(owner, st, f);
  st.lastWasEmptyRead = false;
  // A connection that goes unobserved is not cut: its bytes still flow (a 100 MiB result may take seconds
  // to reach the client), so the process is between two steps of its work, busy, until its next request.
  if (st.inflight == 0 && how != proxy::CutKind::Unobserved)
    st.cutAt = pointText(f.step.verb, f.k, serverName(f.server));
  ++activity_;
  ops::Step s = stepOf(f);
  s.outcome = how == proxy::CutKind::Withheld    ? ops::StepOutcome::Withheld
              : how == proxy::CutKind::Forwarded ? ops::StepOutcome::Forwarded
                                                 : ops::StepOutcome::Unobserved;
  history_.append(names_[owner], std::move(s));
  holdEnded(token);
  if (!f.setUp) { // it is past that step too
    auto more = reached(names_[owner], When::After, f.step.verb, f.pk);
    released.insert(released.end(), more.begin(), more.end());
  }
  return true;
}

void Controller::cutOthers(int owner, const proxy::StepToken& token) {
  if (!hub_) return;
  std::vector<int64_t> ids;
  for (const auto& [id, f] : inflight_)
    if (f.owner == owner && id != token.id) ids.push_back(id);
  for (const auto& [id, h] : heldReplies_)
    if (h.f.owner == owner && id != token.id) ids.push_back(id);
  std::sort(ids.begin(), ids.end()); // in the order they were asked
  std::vector<proxy::StepToken> released;
  for (int64_t id : ids)
    if (auto how = hub_->cutKind(owner, proxy::StepToken{id})) cutStep(owner, id, *how, released);
  releaseTokens(released); // later, on the I/O thread
}

void Controller::onOpaque(int owner, proxy::Server server, int conn, const char* direction, uint64_t offset,
                          const std::string& reason) {
  std::unique_lock<std::mutex> lock(mu_);
  history_.append(names_[owner], ops::Opaque{serverName(server), conn, direction, offset, reason});
  ++activity_;
  lock.unlock();
  cv_.notify_all();
}

std::string Controller::pointText(const std::string& verb, int k, const std::string& server) {
  return fmt::format("{}#{} ({})", verb, k, server);
}

void Controller::settledForGroup(const std::string& id) {
  for (auto& [o, other] : states_) {
    other.held.erase(id);
    other.returned.erase(id);
    other.handedAgain.erase(id);
    other.handedAgainSince.erase(id);
  }
}

} // namespace idem
