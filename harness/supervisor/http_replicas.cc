#include "supervisor/http_replicas.h"

#include "supervisor/http_client.h"

#include "core/owner.h"
#include "core/ports.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <thread>

namespace idem {

namespace {

using std::chrono::milliseconds;

constexpr size_t kHttpServerLogCap = 1 << 20;
/// How long a health check may take before it is asked again.
constexpr milliseconds kHealthWait{1000};

} // namespace

HttpReplicas::HttpReplicas(Workspace::Impl& ws, History& h, Controller& ctl, proxy::Hub& hub, TargetProcesses& procs,
                           int replicas, std::function<void()> tend, std::function<milliseconds()> remaining)
    : ws_(ws), h_(h), ctl_(ctl), hub_(hub), procs_(procs), tend_(std::move(tend)), remaining_(std::move(remaining)),
      servers_(static_cast<size_t>(std::max(1, replicas))) {}

void HttpReplicas::start() {
  for (int r = 1; r <= count(); ++r) startOne(r, "first");
}

void HttpReplicas::startOne(int replica, const char* why) {
  const auto& opt = ws_.options;
  const auto& spec = *ws_.scenario.http;
  for (int portTaken = 0;;) {
    if (nserver_ >= opt.max_processes)
      throw HttpRunLimit{"restart-bound", fmt::format("restart bound of {} server processes reached; raise --max-processes",
                                                      opt.max_processes)};
    Server p;
    p.owner = ++nserver_;
    p.label = fmt::format("s{}", nserver_);
    p.lease = freeListenPort();
    ctl_.addProcess(p.owner, p.label);
    ctl_.setStarting(p.owner, true); // its start-up steps are set-up until it is ready (controller.h)
    // The name it is given is its replica's: s3 replacing s1 serves replica 1 ("s1").
    procs_.start(p, fmt::format("s{}", replica),
                 {{"PORT", std::to_string(p.port())}, {"IDEMPOTENCY_LEASE_MS", std::to_string(spec.policy.leaseMs)},
                  {"IDEMPOTENCY_PAYLOAD_EQUIVALENCE", spec.policy.payloadEquivalence},
                  {"DEDUP_TTL_MS", ws_.target.dedupTtlMs ? std::to_string(*ws_.target.dedupTtlMs) : ""}},
                 kHttpServerLogCap, "server", why);
    auto& slot = servers_.at(static_cast<size_t>(replica - 1));
    slot = std::move(p);
    Start how = Start::Ready;
    try {
      how = waitReady(*slot);
    } catch (const std::runtime_error&) {
      if (slot->child.poll()) { // it exited before it was ready, its exit recorded: nothing left to stop
        hub_.close(slot->owner);
        slot.reset();
      }
      throw;
    }
    ctl_.setStarting(slot->owner, false);
    if (how == Start::Ready) return;
    if (how == Start::PortTaken) {
      if (++portTaken == kPortAttempts)
        throw std::runtime_error(fmt::format("server {}: its PORT was taken by another process before it bound it, {} "
                                             "times in a row", slot->label, kPortAttempts));
      // Its PORT was taken by a process not idemproof's between the check and its bind: not the target's
      // failure. Another port, with a new process.
      h_.append(slot->label, ops::Note{fmt::format("127.0.0.1:{} (its PORT) was taken by another process before it "
                                                   "bound it; a new process on another port replaces it", slot->port())});
    }
    // Exited after a restart: restartOutcome noted it ("s3 exited (exit 1) and was replaced"); a new process,
    // as for a server that exits on what it saw once it serves. --max-processes bounds the attempts.
    hub_.close(slot->owner);
    slot.reset();
  }
}

HttpReplicas::Start HttpReplicas::waitReady(Server& s) {
  const auto& opt = ws_.options;
  const auto since = Clock::now();
  bool foreign = false; // another process answered on its port
  while (true) {
    tend_();
    // A process that exits before it is ready while another process listens on its port did not fail by
    // itself: it could not bind (EADDRINUSE). Not a crash: startOne replaces it on another port.
    auto exited = [&]() -> std::optional<Start> {
      auto es = s.child.poll();
      if (!es) return std::nullopt;
      if (HttpCall(s.port(), "GET", "/", {}, "").connect() && !groupListensOn(s.child.pid(), s.port())) {
        procs_.ended(s, *es, "port-taken");
        return Start::PortTaken;
      }
      procs_.ended(s, *es, "self");
      // A server restart while it started (a fault another process's step fired): its start-up query failed.
      if (std::any_of(restarted_.begin(), restarted_.end(), [&](const Restarted& r) { return r.owner == s.owner; })) {
        restartOutcome(s, es->str());
        return Start::ExitedAfterRestart;
      }
      throw std::runtime_error(fmt::format("server {} exited before it was ready ({}); see its log", s.label, es->str()));
    };
    if (auto e = exited()) return *e;
    // What answers may be another process's that took the port first, before this one tried to bind it:
    // ready only when the listener is a socket of the server's own process group.
    if (ready(s)) {
      if (groupListensOn(s.child.pid(), s.port())) return Start::Ready;
      foreign = true;
    }
    if (remaining_().count() == 0) throw HttpRunLimit{"deadline", fmt::format("server {} not ready at the deadline", s.label)};
    if (Clock::now() - since > opt.start_timeout)
      throw HttpRunLimit{"start-timeout",
                         foreign ? fmt::format("server {} did not listen on 127.0.0.1:{} (its PORT) within {} ms: a "
                                               "process not its own answered there", s.label, s.port(),
                                               opt.start_timeout.count())
                         : ws_.target.health.empty()
                             ? fmt::format("server {} did not accept a connection on 127.0.0.1:{} (its PORT) within {} "
                                           "ms; raise --start-timeout", s.label, s.port(), opt.start_timeout.count())
                             : fmt::format("server {} did not answer GET {} with a 2xx on 127.0.0.1:{} (its PORT) within "
                                           "{} ms; raise --start-timeout", s.label, ws_.target.health, s.port(),
                                           opt.start_timeout.count())};
    std::this_thread::sleep_for(milliseconds(5)); // a process binding its port: nothing to wait on but time
  }
}

bool HttpReplicas::ready(const Server& s) {
  auto c = std::make_shared<HttpCall>(s.port(), "GET", ws_.target.health.empty() ? "/" : ws_.target.health,
                                      std::map<std::string, std::string>{}, "");
  if (ws_.target.health.empty()) return c->connect();
  // A server may accept before it answers: its health check gets a second, then is cancelled and asked again.
  auto answered = std::async(std::launch::async, [c] {
    if (!c->connect() || !c->write()) return false;
    auto a = c->read();
    return a.outcome == "answered" && a.status >= 200 && a.status < 300;
  });
  if (answered.wait_for(kHealthWait) != std::future_status::ready) c->cancel();
  return answered.get();
}

bool HttpReplicas::waitsOnAServer(const std::string& label) const {
  for (const auto& slot : servers_) {
    if (!slot || slot->label != label) continue;
    const auto st = ctl_.state(slot->owner);
    return st.inflight - st.inflightBlocking - st.inflightKeepAlive > 0;
  }
  return false;
}

void HttpReplicas::check() {
  for (int r = 1; r <= count(); ++r) {
    auto& slot = servers_[static_cast<size_t>(r - 1)];
    if (!slot) continue;
    auto st = ctl_.state(slot->owner);
    const bool killed = st.killed && !st.killPoint.empty();
    std::optional<ExitStatus> es =
        killed ? slot->child.waitFor(std::min(milliseconds(5000), remaining_())) : slot->child.poll();
    if (!es) continue;
    procs_.ended(*slot, *es, killed ? "harness" : "self");
    restartOutcome(*slot, killed ? "" : es->str());
    hub_.close(slot->owner);
    slot.reset();
    startOne(r, killed ? "after-kill" : "after-exit");
  }
}

void HttpReplicas::stop() {
  for (auto& slot : servers_) {
    if (!slot) continue;
    procs_.stop(*slot, std::min(ws_.options.grace, std::max(remaining_(), milliseconds(100))));
    restartOutcome(*slot, "");
    hub_.close(slot->owner);
    slot.reset();
  }
}

void HttpReplicas::restarting(const Fault& f, const std::string& server) {
  for (const auto& slot : servers_) {
    if (!slot) continue;
    const auto open = hub_.connections(slot->owner);
    restarted_.push_back({f.str(), server, slot->owner, open});
    // A pool opened at start-up holds connections before any request: the checkers excuse a 5xx from one.
    if (open > 0) h_.append(slot->label, ops::Note::openAtRestart(slot->label, open, server, f.str()));
  }
}

void HttpReplicas::restartOutcome(const Server& s, const std::string& exit) {
  for (auto it = restarted_.begin(); it != restarted_.end();) {
    if (it->owner != s.owner) {
      ++it;
      continue;
    }
    std::string what = hub_.connections(s.owner) > it->connections
                           ? fmt::format("{} reconnected", s.label)
                           : !exit.empty() ? fmt::format("{} exited ({}) and was replaced", s.label, exit)
                                           : ops::Note::noNewConnection(s.label);
    h_.append(s.label, ops::Note::afterRestart(it->server, it->fault, what));
    it = restarted_.erase(it);
  }
}

} // namespace idem
