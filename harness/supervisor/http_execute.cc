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
/// The class is HttpLoop (http_loop.h); its holds are in http_holds.cc, and the answers the client is still
/// owed in http_run_end.cc.
#include "supervisor/http_loop.h"
#include "supervisor/http_payload.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>

namespace idem {

namespace {

using std::chrono::milliseconds;

/// The most a "quiet" wait after a request lasts: a server that keeps working in the background is let be.
constexpr milliseconds kQuietBound{2000};
/// After a cut right after the request: how long the server must be still before the next request goes.
constexpr milliseconds kCutStill{50};

} // namespace

HttpLoop::HttpLoop(Workspace::Impl& ws, History& h, const Schedule& s,
                   const std::map<int, std::map<std::string, std::string>>& fields, std::map<int, HoldPoint> holds,
                   bool rehearsal)
    : ws_(ws), h_(h), s_(s), fields_(fields), spec_(*ws.scenario.http), opt_(ws.options), holds_(std::move(holds)),
      rehearsal_(rehearsal), ctl_(h, s.faults),
      hub_({ws.servers.pg_host, ws.servers.pg_port}, ws.brokerSide(), ctl_), procs_(ws, h, ctl_, hub_),
      started_(Clock::now()), servers_(ws, h, ctl_, hub_, procs_, s.replicas, [this] { tend(); }, [this] { return remaining(); }) {
  ctl_.setHub(&hub_);
  ctl_.setSignals(&procs_);
  for (const auto& e : s.events) keys_[e.n] = freshUuid();
}

void HttpLoop::run() {
  std::error_code ec;
  for (const auto& p : std::filesystem::directory_iterator(ws_.logDir, ec)) std::filesystem::remove_all(p.path(), ec);
  std::optional<HttpRunLimit> limit;
  try {
    servers_.start();
    for (size_t i = 0; i < s_.client.size(); ++i) play(static_cast<int>(i) + 1, s_.client[i]);
    endLate("the client's last request has its answer", false);
    settleParked({}, true);
    quiet();
    if (!rehearsal_) {
      settle();
      lookAgain();
    }
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

void HttpLoop::stop() {
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

milliseconds HttpLoop::remaining() const {
  auto left = opt_.deadline - std::chrono::duration_cast<milliseconds>(Clock::now() - started_);
  return std::max(milliseconds(0), left);
}

// ---- waiting ----

bool HttpLoop::unanswered() const {
  for (const auto& f : flights_)
    if (!f->done && !f->parked) return true;
  return false;
}

bool HttpLoop::waiting() const {
  for (const auto& f : flights_)
    if (!f->done && !f->gaveUp && !f->parked) return true;
  return false;
}

void HttpLoop::quiet(milliseconds still, std::optional<uint64_t> startedAfter) {
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

std::string HttpLoop::keyValue(int key) const {
  return spec_.keyFormat == "sf-string" ? "\"" + keys_.at(key) + "\"" : keys_.at(key);
}

std::string HttpLoop::bodyOf(int event, bool reordered) const {
  return encodePayload(ws_.scenario, fields_.at(event), reordered);
}

std::string HttpLoop::refOf(int event) const {
  const auto& f = fields_.at(event);
  auto it = f.find(ws_.scenario.idField());
  return it == f.end() ? "" : it->second;
}

HttpLoop::Flight& HttpLoop::launch(int replica, int op, const std::string& role, int key, int body,
                                  std::optional<std::string> header, ClientOp::Wait how, int burst,
                                  std::function<void()> barrier, bool afterRetention, const ClientOp* send) {
  auto f = std::make_unique<Flight>();
  f->id = ++nrequest_;
  f->key = key;
  if (key > 0) firstSent_.emplace(key, Clock::now());
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
  f->seen = h_.size();
  f->moved = ctl_.activity();
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

void HttpLoop::finish(Flight& f) {
  if (f.thread.joinable()) f.thread.join();
  ops::Response r;
  r.id = f.id;
  r.outcome = f.answer.outcome == "answered" ? (f.gaveUp ? "late" : "answered") : f.abandoned ? "timeout" : f.answer.outcome;
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

std::string HttpLoop::roleOf(int key, int body) {
  if (key != body) return "mismatch";
  return sent_.insert(key).second ? "original" : "retry";
}

void HttpLoop::waitRetention(int64_t aged) {
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

void HttpLoop::play(int op, const ClientOp& c) {
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
      bool stuck = false; // the server holds it for good before its last step: the client gives up on it
      pump([&] { return f.done.load() || ctl_.gated() > 0 || ctl_.delayed() > 0 || (stuck = overdue(f)); });
      if (stuck && !f.done) {
        ctl_.openGate("");
        abandon(f);
        pump([&] { return f.done.load(); });
        finish(f);
        break;
      }
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

void HttpLoop::holdAtLastStep(int op) {
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

void HttpLoop::burst(int op, const ClientOp& c) {
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
      for (Flight* f : fs)
        if (overdue(*f)) abandon(*f); // the server holds it for good (a lock left held): its thread ends
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