/// The server processes of an HTTP schedule and the client's requests (plan/client_op.h): start the server's
/// replicas behind their proxies (http_replicas.h), play each request in order to the replica it names, kill
/// a server process at its steps (the controller's kill faults, as for consumers) and start a fresh one for
/// its replica, then retry every key that has no final answer the way a client does (the liveness check),
/// and record the final state. Never judges. A hold on one replica's step (hold:s1:…) lets the client go on
/// with its next requests while the held one waits; it ends at its releasing point, once the next request
/// has its answer (released by idleness), when nothing moves while a request waits, or when the client's
/// requests are over.
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
#include "supervisor/http_replicas.h"
#include "supervisor/workspace_impl.h"

#include "plan/fault_kind.h"

#include "core/child.h"
#include "core/error.h"
#include "core/ports.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <set>
#include <thread>

namespace idem {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// Nothing moved (no step, no reply) for this long while a gate holds a step and a request waits: the
/// server makes the waiting request wait for the held one, so the gate opens.
constexpr milliseconds kGateQuiet{300};
/// The most a "quiet" wait after a request lasts: a server that keeps working in the background is let be.
constexpr milliseconds kQuietBound{2000};
/// After a cut right after the request: how long the server must be still before the next request goes.
constexpr milliseconds kCutStill{50};
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
  std::string server; ///< the process it was written to (s1, …)
  std::chrono::steady_clock::time_point launched = std::chrono::steady_clock::now();
  bool parked = false; ///< a hold holds it: the client went on without its answer

  ~Flight() {
    if (thread.joinable()) {
      call->cancel();
      thread.join();
    }
  }
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
        started_(Clock::now()), servers_(ws, h, ctl_, hub_, procs_, s.replicas, [this] { tend(); }, [this] { return remaining(); }) {
    ctl_.setHub(&hub_);
    ctl_.setSignals(&procs_);
    for (const auto& e : s.events) keys_[e.n] = freshUuid();
  }

  void run() {
    std::error_code ec;
    for (const auto& p : std::filesystem::directory_iterator(ws_.logDir, ec)) std::filesystem::remove_all(p.path(), ec);
    std::optional<HttpRunLimit> limit;
    try {
      servers_.start();
      for (size_t i = 0; i < s_.client.size(); ++i) play(static_cast<int>(i) + 1, s_.client[i]);
      endLate("the client's last request has its answer", false);
      settleParked({}, true);
      quiet();
      if (!rehearsal_) settle();
      endLate("the client's retries are over");
    } catch (const HttpRunLimit& l) {
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
    parked_.clear();
    servers_.stop();
    procs_.reapEscaped();
  }

  milliseconds remaining() const {
    auto left = opt_.deadline - std::chrono::duration_cast<milliseconds>(Clock::now() - started_);
    return std::max(milliseconds(0), left);
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
      if (h.fault.args.size() != 1 && !(h.pause && h.fault.args.empty())) continue; // released by a point or idleness
      const int64_t ms = h.fault.args.size() == 1 ? std::stoll(h.fault.args[0]) : kHttpPauseMs;
      if (Clock::now() - h.since >= milliseconds(ms)) ctl_.releaseHold(h.token.id, fmt::format("{} ms passed", ms));
    }
  }

  // ---- holds between replicas (hold:s1:before:COMMIT#1[:s2:after:COMMIT#1]) ----

  /// A hold (or a pause) that ends at another process's point or at the others' idleness: the client does
  /// not wait for the request it holds, and goes on with the next one.
  static bool parks(const Controller::ActiveHold& h) { return h.fault.args.size() != 1 && !(h.pause && h.fault.args.empty()); }

  /// Whether a hold that began after `f` was written holds a step of `f`'s process: `f` waits at it.
  bool heldAt(const Flight& f) const {
    for (const auto& h : ctl_.activeHolds())
      if (parks(h) && h.process == f.server && h.since >= f.launched) return true;
    return false;
  }

  /// Waits for `f`'s answer, or until a hold holds it: then the client goes on (true: it has its answer).
  bool answerOrPark(Flight& f) {
    pump([&] { return f.done.load() || heldAt(f); });
    if (f.done) return true;
    f.parked = true;
    parked_.push_back(&f);
    h_.append("client", ops::Note{fmt::format("r{} waits at a hold on {}: the client goes on", f.id, f.server)});
    return false;
  }

  /// After a request: a hold released by idleness that was holding before it began is released now (every
  /// other process is idle: the request has its answer), and a parked request no hold holds any more gets
  /// its answer. `end`: the client's requests are over, every hold is released.
  void settleParked(const std::set<int64_t>& before, bool end) {
    for (const auto& h : ctl_.activeHolds())
      if (parks(h) && (end || (before.count(h.token.id) && h.fault.args.empty())))
        ctl_.releaseHold(h.token.id, end ? "the client's last request has its answer"
                                         : "the next request has its answer: every other process is idle");
    for (auto it = parked_.begin(); it != parked_.end();) {
      Flight* f = *it;
      const auto holds = ctl_.activeHolds();
      const bool held = std::any_of(holds.begin(), holds.end(), [&](const Controller::ActiveHold& h) { return h.process == f->server; });
      if (!f->done && held) {
        ++it;
        continue;
      }
      f->parked = false; // the client waits for it now: a hold that holds it again ends when nothing moves
      pump([&] { return f->done.load(); });
      it = parked_.erase(it);
      finish(*f);
    }
  }

  std::set<int64_t> holdsNow() const {
    std::set<int64_t> out;
    for (const auto& h : ctl_.activeHolds()) out.insert(h.token.id);
    return out;
  }

  /// A restart fault: restarts the server while the proxy refuses connections to it (as its own port would),
  /// and notes the server process's connections so far, to tell once it ends whether it reconnected.
  void restartServer(const Fault& f) {
    const bool pg = f.args.at(0) == "pg";
    servers_.restarting(f, pg ? "PostgreSQL" : ws_.broker->title());
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
      servers_.check();
      if (ctl_.gated() > 0 && Clock::now() - moved >= kGateQuiet && waiting()) {
        ctl_.openGate(fmt::format("nothing moved for {} ms while a request waits for its answer", kGateQuiet.count()));
        moved = Clock::now();
      } else if (Clock::now() - moved >= kGateQuiet && unanswered()) {
        // The server makes the waiting request wait for a held one (a lock, a "wait" policy): a hold ends.
        for (const auto& h : ctl_.activeHolds())
          if (parks(h))
            ctl_.releaseHold(h.token.id, fmt::format("nothing moved for {} ms while a request waits for its answer "
                                                     "(the held one may hold what it waits for)", kGateQuiet.count()));
        moved = Clock::now();
      }
      if (remaining().count() == 0)
        throw HttpRunLimit{"deadline", fmt::format("deadline of {} ms reached while the client waited for an answer; raise --deadline",
                                               opt_.deadline.count())};
    }
  }

  /// A request without its answer that no hold parked (one the client gave up on too: it is waited for at
  /// the end of its hold).
  bool unanswered() const {
    for (const auto& f : flights_)
      if (!f->done && !f->parked) return true;
    return false;
  }

  /// A request the client is waiting for (not one it gave up on).
  bool waiting() const {
    for (const auto& f : flights_)
      if (!f->done && !f->gaveUp && !f->parked) return true;
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
      servers_.check();
      uint64_t now = ctl_.waitForActivity(seen, milliseconds(2));
      if (now != seen) moved = Clock::now();
      seen = now;
      if (startedAfter && seen == *startedAfter) continue;
      // A step a hold or a pause withholds stays in flight until its release; so does, for the delay's
      // time, a timed-out request a delay holds: nothing the next request waits for.
      const int held = static_cast<int>(ctl_.activeHolds().size()) + (late_ ? ctl_.delayed() : 0);
      if (ctl_.inflightAll() <= ctl_.gated() + held && Clock::now() - moved >= still) return;
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

  /// Writes a request to replica `replica` on its own thread; `how` is what the client does with the answer.
  Flight& launch(int replica, int op, const std::string& role, int key, int body, std::optional<std::string> header,
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
    f->server = servers_.label(replica);
    f->call = std::make_unique<HttpCall>(servers_.port(replica), spec_.method, spec_.path, headers, bodyOf(body, reordered));
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
    r.server = f->server;
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
    const std::set<int64_t> holdsBefore = holdsNow();
    switch (c.kind) {
    case ClientOp::Kind::Send: {
      const bool timeout = c.wait == ClientOp::Wait::Timeout;
      if (timeout) {
        endLate("another request of the client timed out"); // one request in flight at a time
        holdAtLastStep(op);
      }
      if (c.afterRetention || c.agedMs) waitRetention(c.agedMs);
      const uint64_t before = ctl_.activity();
      Flight& f = launch(c.replicaOf(1, s_.replicas), op, roleOf(c.key, c.body), c.key, c.body, keyValue(c.key), c.wait, 0, {},
                         c.afterRetention, &c);
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
      } else if (!answerOrPark(f)) {
        break;
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
      Flight& f = launch(c.replicaOf(1, s_.replicas), op, toString(c.kind), 0, c.body, header, ClientOp::Wait::Answer);
      if (answerOrPark(f)) finish(f);
      break;
    }
    case ClientOp::Kind::Burst:
      burst(op, c);
      break;
    }
    if (lateBefore && late_ == lateBefore) endLate("the next request has its answer", false);
    settleParked(holdsBefore, false);
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
      fs.push_back(&launch(c.replicaOf(i, s_.replicas), op, roleOf(c.key, c.key), c.key, c.key, keyValue(c.key),
                           ClientOp::Wait::Answer, i, barrier));
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
        fs.push_back(&launch(c.replicaOf(c.copies, s_.replicas), op, roleOf(c.key, c.other), c.key, c.other, keyValue(c.key),
                             ClientOp::Wait::Answer, c.copies));
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
    int attempt = 0;
    for (int key : keys) {
      if (completed_.count(key)) continue;
      const auto until = Clock::now() + milliseconds(spec_.policy.leaseMs) + kLeaseMargin;
      while (true) {
        // Round robin over the replicas, each live (a process that ended was replaced): a retry goes to any.
        Flight& f = launch(attempt++ % s_.replicas + 1, 0, "settle", key, key, keyValue(key), ClientOp::Wait::Answer);
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
  int nrequest_ = 0;
  std::map<int, std::string> keys_; ///< event -> its Idempotency-Key (fresh per execution)
  std::set<int> sent_;              ///< keys sent with their own payload so far
  std::set<int> completed_;         ///< keys whose own payload got a final 2xx answer
  std::vector<std::unique_ptr<Flight>> flights_;
  Flight* late_ = nullptr;          ///< a request the client gave up on, held in flight
  std::vector<Flight*> parked_;     ///< requests whose replica a hold holds: the client went on (http_holds)
  HttpReplicas servers_;
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
