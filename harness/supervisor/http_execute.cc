/// The server process of an HTTP schedule and the client's requests (plan/client_op.h): start the server
/// behind the proxies, wait until it is ready, play each request in order, kill the server at its steps
/// (the controller's kill faults, as for consumers) and start a fresh one, then retry every key that has no
/// final answer the way a client does (the liveness check), and record the final state. Never judges.
/// The other faults at the server's steps are the proxies' (drop, delay, error) or carried out here while
/// their step waits: a restart of PostgreSQL or Valkey, and the end of a pause (the server woken, SIGCONT,
/// after its time, before its withheld bytes go on).
///
/// Timing is the client's, never the clock's, wherever the harness can decide it:
///  timeout  the server's last step before its answer (learned from a fault-free rehearsal: http_hold.h) is
///           held at the proxy; the client gives up once it is held (its timeout fired while the server
///           works), and the hold lasts until the next request has its answer;
///  burst    every COMMIT is held until each copy still running waits at its COMMIT (the barrier), so the
///           copies' transactions overlap in every run;
///  quiet    after a request the next one waits until the server has nothing in flight at PostgreSQL.
/// A hold that would hang (the server blocks the waiting request on the held one: a lock, a "wait" policy)
/// is released after kGateQuiet without any step; that release is noted.
#include "supervisor/controller.h"
#include "supervisor/processes.h"
#include "supervisor/http_client.h"
#include "supervisor/http_hold.h"
#include "supervisor/http_payload.h"
#include "supervisor/workspace_impl.h"

#include "plan/fault_kind.h"

#include "core/child.h"
#include "core/error.h"
#include "core/ports.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <future>
#include <csignal>
#include <thread>

namespace idem {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t kHttpServerLogCap = 1 << 20;
/// Nothing moved (no step, no reply) for this long while a gate holds a step and a request waits: the
/// server makes the waiting request wait for the held one, so the gate opens.
constexpr milliseconds kGateQuiet{300};
/// The most a "quiet" wait after a request lasts: a server that keeps working in the background is let be.
constexpr milliseconds kQuietBound{2000};
/// After a cut right after the request: how long the server must be still before the next request goes.
constexpr milliseconds kCutStill{50};
/// How long a health check may take before it is asked again.
constexpr milliseconds kHealthWait{1000};
/// The client's pause between retries of a key that has no final answer yet.
constexpr milliseconds kRetryEvery{100};
/// How long past the declared lease the client keeps retrying a key (timing noise of the server's clock).
constexpr milliseconds kLeaseMargin{500};

/// A request of the client on its own thread.
struct Flight {
  int id = 0;
  std::unique_ptr<HttpCall> call;
  std::thread thread;
  std::atomic<bool> done{false};
  HttpAnswer answer;
  bool gaveUp = false;   ///< the client timed out: its answer is late
  int key = 0, body = 0;

  ~Flight() {
    if (thread.joinable()) {
      call->cancel();
      thread.join();
    }
  }
};

struct RunLimit {
  std::string limit, reason;
};

class HttpLoop {
public:
  /// `holds`: the learned hold point of each timed-out request (by op); `rehearsal`: the run only learns them
  /// (no settling, no final state).
  HttpLoop(Workspace::Impl& ws, History& h, const Schedule& s, const std::map<int, std::map<std::string, std::string>>& fields,
           std::map<int, HoldPoint> holds = {}, bool rehearsal = false)
      : ws_(ws), h_(h), s_(s), fields_(fields), spec_(*ws.scenario.http), opt_(ws.options), holds_(std::move(holds)),
        rehearsal_(rehearsal), ctl_(h, s.faults),
        hub_({ws.servers.pg_host, ws.servers.pg_port}, ws.brokerSide(), ctl_), procs_(ws, h, ctl_, hub_),
        started_(Clock::now()) {
    ctl_.setHub(&hub_);
    ctl_.setSignals(&procs_);
    for (const auto& e : s.events) keys_[e.n] = freshUuid();
  }

  void run() {
    std::error_code ec;
    for (const auto& p : std::filesystem::directory_iterator(ws_.logDir, ec)) std::filesystem::remove_all(p.path(), ec);
    std::optional<RunLimit> limit;
    try {
      startServer("first");
      for (size_t i = 0; i < s_.client.size(); ++i) play(static_cast<int>(i) + 1, s_.client[i]);
      endLate("the client's last request has its answer", false);
      if (!rehearsal_) settle();
      endLate("the client's retries are over");
    } catch (const RunLimit& l) {
      limit = l;
    } catch (...) {
      stop();
      throw;
    }
    stop();
    if (rehearsal_) {
      if (limit) throw std::runtime_error(fmt::format("the rehearsal of the timed-out requests ended at a limit: {}", limit->reason));
      return;
    }
    ops::Final fin = ws_.finalState();
    if (limit) {
      fin.end = ops::RunEnd::Limit;
      fin.limit = limit->limit;
      fin.reason = limit->reason;
    }
    h_.append("harness", std::move(fin));
  }

private:
  /// Ends every request, the server and whatever it started.
  void stop() {
    for (auto& f : flights_)
      if (f->thread.joinable()) f->call->cancel();
    flights_.clear();
    ctl_.openGate("the run ended");
    for (const auto& h : ctl_.activeHolds()) ctl_.releaseHold(h.token.id, "the run ended"); // a pause wakes first
    late_ = nullptr;
    stopServer();
    procs_.reapEscaped();
  }

  /// The server process (s1, s2, ...) and the port it is told to listen on.
  struct Server : TargetProcess {
    int port = 0;
  };

  milliseconds remaining() const {
    auto left = opt_.deadline - std::chrono::duration_cast<milliseconds>(Clock::now() - started_);
    return std::max(milliseconds(0), left);
  }

  // ---- the server process ----

  void startServer(const char* why) {
    if (nserver_ >= opt_.max_processes)
      throw RunLimit{"restart-bound", fmt::format("restart bound of {} server processes reached; raise --max-processes",
                                                  opt_.max_processes)};
    Server p;
    p.owner = ++nserver_;
    p.label = fmt::format("s{}", nserver_);
    p.port = freeListenPort();
    ctl_.addProcess(p.owner, p.label);
    procs_.start(p, p.label,
                 {{"PORT", std::to_string(p.port)}, {"IDEMPOTENCY_LEASE_MS", std::to_string(spec_.policy.leaseMs)},
                  {"IDEMPOTENCY_PAYLOAD_EQUIVALENCE", spec_.policy.payloadEquivalence},
                  {"DEDUP_TTL_MS", ws_.target.dedupTtlMs ? std::to_string(*ws_.target.dedupTtlMs) : ""}},
                 kHttpServerLogCap, "server", why);
    server_ = std::move(p);
    waitReady();
  }

  /// Until the server accepts a connection (and its health path answers 2xx, when the manifest names one).
  void waitReady() {
    const auto since = Clock::now();
    while (true) {
      tend();
      if (auto es = server_->child.poll()) {
        procs_.ended(*server_, *es, "self");
        throw std::runtime_error(fmt::format("server {} exited before it was ready ({}); see its log", server_->label, es->str()));
      }
      if (ready()) return;
      if (remaining().count() == 0) throw RunLimit{"deadline", fmt::format("server {} not ready at the deadline", server_->label)};
      if (Clock::now() - since > opt_.start_timeout)
        throw RunLimit{"start-timeout",
                       ws_.target.health.empty()
                           ? fmt::format("server {} did not accept a connection on 127.0.0.1:{} (its PORT) within {} ms; "
                                         "raise --start-timeout", server_->label, server_->port, opt_.start_timeout.count())
                           : fmt::format("server {} did not answer GET {} with a 2xx on 127.0.0.1:{} (its PORT) within {} "
                                         "ms; raise --start-timeout", server_->label, ws_.target.health, server_->port,
                                         opt_.start_timeout.count())};
      std::this_thread::sleep_for(milliseconds(5)); // a process binding its port: nothing to wait on but time
    }
  }

  bool ready() {
    auto c = std::make_shared<HttpCall>(server_->port, "GET", ws_.target.health.empty() ? "/" : ws_.target.health,
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


  /// The server ended (killed at a kill point, or by itself): record it and start the next one.
  void checkServer() {
    if (!server_) return;
    auto st = ctl_.state(server_->owner);
    bool killed = st.killed && !st.killPoint.empty();
    std::optional<ExitStatus> es = killed ? server_->child.waitFor(std::min(milliseconds(5000), remaining())) : server_->child.poll();
    if (!es) return;
    procs_.ended(*server_, *es, killed ? "harness" : "self");
    restartOutcome(killed ? "" : es->str());
    hub_.close(server_->owner);
    server_.reset();
    startServer(killed ? "after-kill" : "after-exit");
  }

  void stopServer() {
    if (!server_) return;
    procs_.stop(*server_, std::min(opt_.grace, std::max(remaining(), milliseconds(100))));
    restartOutcome("");
    hub_.close(server_->owner);
    server_.reset();
  }

  // ---- faults carried out here ----

  /// What the controller leaves to the supervisor while a step waits: a restart fault's server restart (forget
  /// and age are refused for HTTP scenarios), and a pause's end once its time (its MS, else kHttpPauseMs) has
  /// passed: the controller wakes the server (SIGCONT) before the step goes on.
  void tend() {
    for (const auto& a : ctl_.takeServerActions()) {
      if (faultKind(a.fault.kind, "fault").effect(a.fault).action == Effect::Action::Restart) restartServer(a.fault);
      ctl_.serverActionDone(a);
    }
    for (const auto& h : ctl_.activeHolds()) {
      if (!h.pause) continue;
      const int64_t ms = h.fault.args.size() == 1 ? std::stoll(h.fault.args[0]) : kHttpPauseMs;
      if (Clock::now() - h.since >= milliseconds(ms)) ctl_.releaseHold(h.token.id, fmt::format("{} ms passed", ms));
    }
  }

  /// A restart fault: restarts the server while the proxy refuses connections to it (as its own port would),
  /// and notes the server process's connections so far, to tell once it ends whether it reconnected.
  void restartServer(const Fault& f) {
    const bool pg = f.args.at(0) == "pg";
    if (server_) restarted_.push_back({f.str(), pg ? "PostgreSQL" : ws_.broker->title(), server_->owner, hub_.connections(server_->owner)});
    const auto which = pg ? proxy::Server::Pg : proxy::Server::Broker;
    hub_.refuse(which, true);
    try {
      ws_.restartServer(f.args.at(0));
    } catch (...) {
      hub_.refuse(which, false);
      throw;
    }
    hub_.refuse(which, false);
  }

  /// How the server process that ends now (`exit`: how it exited by itself, "" when the harness stopped or
  /// killed it) came through the restarts it lived through: "s1 reconnected" / "s1 exited (exit 1) and was
  /// replaced" / "s1 made no new connection".
  void restartOutcome(const std::string& exit) {
    for (auto it = restarted_.begin(); it != restarted_.end();) {
      if (it->owner != server_->owner) {
        ++it;
        continue;
      }
      std::string what = hub_.connections(server_->owner) > it->connections
                             ? fmt::format("{} reconnected", server_->label)
                             : !exit.empty() ? fmt::format("{} exited ({}) and was replaced", server_->label, exit)
                                             : fmt::format("{} made no new connection", server_->label);
      h_.append(server_->label, ops::Note{fmt::format("after the {} restart ({}): {}", it->server, it->fault, what)});
      it = restarted_.erase(it);
    }
  }

  // ---- waiting ----

  /// Watches the run until `done()`: restarts a server that ended, opens a gate that would hang, and
  /// ends the run at the deadline.
  template <class Done>
  void pump(Done done) {
    uint64_t seen = ctl_.activity();
    auto moved = Clock::now();
    while (!done()) {
      uint64_t now = ctl_.waitForActivity(seen, milliseconds(2));
      if (now != seen) moved = Clock::now();
      seen = now;
      tend();
      checkServer();
      if (ctl_.gated() > 0 && Clock::now() - moved >= kGateQuiet && waiting()) {
        ctl_.openGate(fmt::format("nothing moved for {} ms while a request waits for its answer", kGateQuiet.count()));
        moved = Clock::now();
      }
      if (remaining().count() == 0)
        throw RunLimit{"deadline", fmt::format("deadline of {} ms reached while the client waited for an answer; raise --deadline",
                                               opt_.deadline.count())};
    }
  }

  /// A request the client is waiting for (not one it gave up on).
  bool waiting() const {
    for (const auto& f : flights_)
      if (!f->done && !f->gaveUp) return true;
    return false;
  }

  /// Until the server has no step in flight at PostgreSQL or Valkey and nothing moved for `still`: what a
  /// request set going is over before the next one is written. With `startedAfter`, also until something
  /// moved after that activity count (a request whose answer the client did not wait for: the server may
  /// not have begun it yet). Bounded (kQuietBound).
  void quiet(milliseconds still = milliseconds(10), std::optional<uint64_t> startedAfter = std::nullopt) {
    const auto since = Clock::now();
    uint64_t seen = ctl_.activity();
    auto moved = Clock::now();
    while (Clock::now() - since < kQuietBound) {
      tend();
      checkServer();
      uint64_t now = ctl_.waitForActivity(seen, milliseconds(2));
      if (now != seen) moved = Clock::now();
      seen = now;
      if (startedAfter && seen == *startedAfter) continue;
      // A timed-out request a delay holds is in flight for the delay's time: nothing the next request waits for.
      if (ctl_.inflightAll() == ctl_.gated() + (late_ ? ctl_.delayed() : 0) && Clock::now() - moved >= still) return;
    }
  }

  // ---- requests ----

  std::string keyValue(int key) const {
    return spec_.keyFormat == "sf-string" ? "\"" + keys_.at(key) + "\"" : keys_.at(key);
  }

  std::string bodyOf(int event, bool reordered = false) const {
    return encodePayload(ws_.scenario, fields_.at(event), reordered);
  }

  std::string refOf(int event) const {
    const auto& f = fields_.at(event);
    auto it = f.find(ws_.scenario.idField());
    return it == f.end() ? "" : it->second;
  }

  /// Writes a request on its own thread; `how` is what the client does with the answer.
  Flight& launch(int op, const std::string& role, int key, int body, std::optional<std::string> header,
                 ClientOp::Wait how, int burst = 0, std::function<void()> barrier = {}, bool afterRetention = false,
                 const ClientOp* send = nullptr) {
    auto f = std::make_unique<Flight>();
    f->id = ++nrequest_;
    f->key = key;
    f->body = body;
    std::map<std::string, std::string> headers;
    if (header) headers[spec_.keyHeader] = *header;
    headers["Content-Type"] = payloadContentType(spec_);
    const bool reordered = send && send->reordered;
    f->call = std::make_unique<HttpCall>(server_->port, spec_.method, spec_.path, headers, bodyOf(body, reordered));
    ops::Request r;
    r.id = f->id;
    r.op = op;
    r.role = role;
    r.key = key;
    r.body = body;
    r.keyHeader = header.has_value();
    r.keyValue = header.value_or("");
    r.ref = refOf(body);
    r.wait = toString(how);
    r.server = server_->label;
    r.burst = burst;
    r.afterRetention = afterRetention;
    r.reordered = reordered;
    r.agedMs = send ? send->agedMs : 0;
    h_.append("client", r);
    Flight* fp = f.get();
    f->thread = std::thread([fp, how, barrier] {
      HttpAnswer a;
      if (!fp->call->connect()) {
        a.outcome = "refused";
        if (barrier) barrier();
      } else {
        if (barrier) barrier();
        if (!fp->call->write()) a.outcome = "reset";
        else if (how == ClientOp::Wait::CutRequest) fp->call->close(), a.outcome = "cut";
        else if (how == ClientOp::Wait::CutHeaders) a = fp->call->readHeadersThenCut();
        else if (how == ClientOp::Wait::CutBody) a = fp->call->readSomeThenCut();
        else a = fp->call->read();
      }
      fp->answer = std::move(a);
      fp->done = true;
    });
    flights_.push_back(std::move(f));
    return *fp;
  }

  /// Records the answer of a finished flight and forgets it.
  void finish(Flight& f) {
    if (f.thread.joinable()) f.thread.join();
    ops::Response r;
    r.id = f.id;
    r.outcome = f.gaveUp && f.answer.outcome == "answered" ? "late" : f.answer.outcome;
    r.status = f.answer.status;
    r.location = f.answer.location;
    r.digest = f.answer.digest;
    r.body = f.answer.body;
    r.jsonDigest = f.answer.jsonDigest;
    r.contentType = f.answer.contentType;
    r.size = f.answer.size;
    h_.append("client", r);
    if (r.final() && f.key && f.key == f.body && r.status >= 200 && r.status < 300) completed_.insert(f.key);
    for (auto it = flights_.begin(); it != flights_.end(); ++it)
      if (it->get() == &f) {
        flights_.erase(it);
        break;
      }
  }

  std::string roleOf(int key, int body) {
    if (key != body) return "mismatch";
    return sent_.insert(key).second ? "original" : "retry";
  }

  /// Lets the declared retention pass (from now: the key's last request has ended), so that the next
  /// request may find its key forgotten.
  void waitRetention(int64_t aged = 0) {
    endLate("the client waits out the retention");
    // A key store the scenario can prune (its `prune`, the server's declared dedup_ttl_ms) ages by simulated
    // time, as an `age` fault ages a consumer's (docs/faults.md): no waiting.
    if (aged && !ws_.scenario.prune.empty() && ws_.target.dedupTtlMs && ws_.servers.embedded) {
      const ops::Aged a = ws_.age(aged);
      h_.append("client", ops::Note{fmt::format("{} ms of simulated time pass for the server's keys: {} ({} row{} pruned)",
                                                a.ms, a.prune, a.pruned, a.pruned == 1 ? "" : "s")});
      return;
    }
    const int64_t ms = aged ? aged : spec_.policy.retentionMs; // at most kMaxRetentionWaitMs: checkClientOps refused more
    h_.append("client", ops::Note{aged ? fmt::format("the client waits {} ms (the declared retention is {} ms)", ms,
                                                     spec_.policy.retentionMs)
                                       : fmt::format("the client waits {} ms, the declared retention", ms)});
    const auto until = Clock::now() + milliseconds(ms);
    pump([&] { return Clock::now() >= until; });
  }

  /// A request the client gave up on (a timeout): its hold lasts until the next request has its answer. One a
  /// delay fault holds stays in flight for the delay's time: unless `mustEnd`, the client does not wait for it
  /// (its next requests, its retries at the end, go on meanwhile); it reads its answer once it comes.
  void endLate(const std::string& why, bool mustEnd = true) {
    if (!late_) return;
    ctl_.openGate(why);
    if (!mustEnd && !late_->done && ctl_.delayed() > 0) return;
    Flight* f = late_;
    late_ = nullptr;
    pump([&] { return f->done.load(); });
    finish(*f);
    quiet();
  }

  void play(int op, const ClientOp& c) {
    Flight* lateBefore = late_;
    switch (c.kind) {
    case ClientOp::Kind::Send: {
      const bool timeout = c.wait == ClientOp::Wait::Timeout;
      if (timeout) {
        endLate("another request of the client timed out"); // one request in flight at a time
        holdAtLastStep(op);
      }
      if (c.afterRetention || c.agedMs) waitRetention(c.agedMs);
      const uint64_t before = ctl_.activity();
      Flight& f = launch(op, roleOf(c.key, c.body), c.key, c.body, keyValue(c.key), c.wait, 0, {}, c.afterRetention, &c);
      if (timeout) {
        // Held at its last step, or a delay holds one of its steps: the server works on it, the client gives up.
        pump([&] { return f.done.load() || ctl_.gated() > 0 || ctl_.delayed() > 0; });
        if (!f.done) {
          if (ctl_.gated() == 0) ctl_.openGate(""); // a delay holds it: the gate must not hold the next request's step
          f.gaveUp = true;
          late_ = &f;
          h_.append("client", ops::Note{fmt::format("r{} timed out: the client gives up while the server works on it", f.id)});
          return; // the next request goes while this one is in flight
        }
        ctl_.openGate("");
      } else {
        pump([&] { return f.done.load(); });
      }
      const bool unread = f.answer.outcome == "cut" && c.wait == ClientOp::Wait::CutRequest;
      finish(f);
      // The client closed before the server answered: the server may not have begun, and it works on
      // after the cut. The next request waits until it has worked and then been still for a while.
      if (unread) quiet(kCutStill, before);
      break;
    }
    case ClientOp::Kind::NoKey:
    case ClientOp::Kind::BadKey: {
      std::optional<std::string> header;
      if (c.kind == ClientOp::Kind::BadKey) {
        const std::string& k = keys_.at(c.body);
        header = c.malformed == "empty" ? "" : c.malformed == "token" ? k : "\"" + k;
      }
      Flight& f = launch(op, toString(c.kind), 0, c.body, header, ClientOp::Wait::Answer);
      pump([&] { return f.done.load(); });
      finish(f);
      break;
    }
    case ClientOp::Kind::Burst:
      burst(op, c);
      break;
    }
    if (lateBefore && late_ == lateBefore) endLate("the next request has its answer", false);
    quiet();
  }

  /// Arms the gate at the timed-out request's last step before its answer (learned by the rehearsal; its
  /// COMMIT when the rehearsal's request made no step).
  void holdAtLastStep(int op) {
    const std::string why = fmt::format("r{}'s client timeout: it stays in flight", nrequest_ + 1);
    auto it = holds_.find(op);
    if (it == holds_.end()) {
      ctl_.gate("COMMIT", 1, why);
      return;
    }
    h_.append("client", ops::Note{fmt::format("r{}'s last step before its answer in the fault-free rehearsal: {}",
                                              nrequest_ + 1, describe(it->second))});
    ctl_.gate(it->second.verb, 1, why, it->second.nth - 1);
  }

  /// `copies` requests on as many connections, written together once all are connected; every COMMIT is
  /// held until each copy still running waits at one (or nothing moves), so their transactions overlap.
  void burst(int op, const ClientOp& c) {
    ctl_.gate("COMMIT", -1, fmt::format("the burst's barrier: its {} copies commit together", c.copies));
    std::mutex mu;
    std::condition_variable cv;
    int arrived = 0;
    // With another payload, its copy is written last, once the others' work has begun (a COMMIT waits at
    // the barrier, or the others have their answers, or nothing moved for kGateQuiet): it is the path that
    // lost the race, in every run, and whether the server compares payloads there is what it shows.
    const int together = c.other ? c.copies - 1 : c.copies;
    auto barrier = [&, n = together] {
      std::unique_lock<std::mutex> lock(mu);
      if (++arrived == n) cv.notify_all();
      cv.wait(lock, [&] { return arrived >= n; });
    };
    std::vector<Flight*> fs;
    for (int i = 1; i <= together; ++i)
      fs.push_back(&launch(op, roleOf(c.key, c.key), c.key, c.key, keyValue(c.key), ClientOp::Wait::Answer, i, barrier));
    auto running = [&] { return static_cast<int>(std::count_if(fs.begin(), fs.end(), [](Flight* f) { return !f->done; })); };
    try {
      if (c.other) {
        uint64_t seen = ctl_.activity();
        const auto t0 = Clock::now();
        auto moved = t0;
        bool started = false;
        pump([&] {
          if (uint64_t a = ctl_.activity(); a != seen) seen = a, moved = Clock::now(), started = true;
          const auto now = Clock::now();
          return ctl_.gated() > 0 || running() == 0 || (started && now - moved >= kGateQuiet) || now - t0 >= kQuietBound;
        });
        fs.push_back(&launch(op, roleOf(c.key, c.other), c.key, c.other, keyValue(c.key), ClientOp::Wait::Answer, c.copies));
      }
      pump([&] {
        if (running() == 0) return true;
        if (ctl_.gated() > 0 && ctl_.gated() >= running()) ctl_.openGate("every copy still running waits at its COMMIT");
        return false;
      });
    } catch (...) { // the copies' threads use the barrier on this frame: they end before it does
      ctl_.openGate("the run ended");
      for (Flight* f : fs) {
        f->call->cancel();
        if (f->thread.joinable()) f->thread.join();
      }
      throw;
    }
    ctl_.openGate("the burst is over");
    for (Flight* f : fs) finish(*f);
  }

  /// The client's retry policy at the end: a key with no final 2xx answer to its own payload is sent again
  /// (same key, same payload) every kRetryEvery while the answer is the in-flight status, a 5xx or no
  /// answer, for the declared lease and kLeaseMargin more, and while a timed-out request of the key a delay
  /// holds has not had its answer. What it got then is what the checkers judge.
  void settle() {
    std::vector<int> keys;
    for (const auto& c : s_.client)
      if ((c.kind == ClientOp::Kind::Send || c.kind == ClientOp::Kind::Burst) &&
          std::find(keys.begin(), keys.end(), c.key) == keys.end())
        keys.push_back(c.key);
    for (int key : keys) {
      if (completed_.count(key)) continue;
      const auto until = Clock::now() + milliseconds(spec_.policy.leaseMs) + kLeaseMargin;
      while (true) {
        Flight& f = launch(0, "settle", key, key, keyValue(key), ClientOp::Wait::Answer);
        pump([&] { return f.done.load(); });
        HttpAnswer a = f.answer;
        finish(f);
        quiet();
        if (completed_.count(key)) break;
        // A stored 5xx (replay_5xx) is the key's answer: one retry got it again, the client stops.
        bool again = !(a.outcome == "answered") || (a.status >= 500 && !spec_.policy.replay5xx) ||
                     (spec_.policy.inFlight != 0 && a.status == spec_.policy.inFlight);
        // A timed-out request of the key a delay still holds is an answer still due: the client retries on
        // until it has come (then the lease counts from a server with nothing of the key in flight).
        const bool due = late_ && !late_->done && late_->key == key;
        if (!again || (Clock::now() >= until && !due)) break;
        pump([t = Clock::now() + kRetryEvery] { return Clock::now() >= t; }); // the client's back-off
      }
    }
  }

  Workspace::Impl& ws_;
  History& h_;
  const Schedule& s_;
  const std::map<int, std::map<std::string, std::string>>& fields_;
  const HttpSpec& spec_;
  RunOptions opt_;
  std::map<int, HoldPoint> holds_; ///< client op -> where its timeout holds it
  bool rehearsal_ = false;
  Controller ctl_;
  proxy::Hub hub_;
  TargetProcesses procs_;
  Clock::time_point started_;
  std::optional<Server> server_;
  int nserver_ = 0;
  int nrequest_ = 0;
  std::map<int, std::string> keys_; ///< event -> its Idempotency-Key (fresh per execution)
  std::set<int> sent_;              ///< keys sent with their own payload so far
  std::set<int> completed_;         ///< keys whose own payload got a final 2xx answer
  std::vector<std::unique_ptr<Flight>> flights_;
  Flight* late_ = nullptr;          ///< a request the client gave up on, held in flight
  /// A server restart the live server process met, until that process ends (restartOutcome).
  struct Restarted {
    std::string fault, server;
    int owner = 0;
    int connections = 0; ///< its connections made before the restart
  };
  std::vector<Restarted> restarted_;
};

} // namespace

void Workspace::Impl::runServer(History& h, const Schedule& s, const std::map<int, std::map<std::string, std::string>>& fields) {
  std::map<int, HoldPoint> holds;
  if (hasTimeout(s)) {
    // The timed-out requests' last steps, from a fault-free rehearsal of the requests up to the last of them
    // against the same initial state; the stores are then reset for the run itself.
    History scratch;
    if (sink) sink->reset(*scenario.sink, scenario.sink->honoursKeys, &scratch);
    HttpLoop(*this, scratch, rehearsalOf(s), fields, {}, true).run();
    holds = learnHoldPoints(scratch.ops());
    broker->reset();
    reset();
    if (sink) sink->reset(*scenario.sink, scenario.sink->honoursKeys, &h);
  }
  HttpLoop(*this, h, s, fields, std::move(holds)).run();
}

} // namespace idem
