#pragma once
/// Private to the supervisor: the server processes and the client's requests of one HTTP schedule
/// (Workspace::Impl::runServer), one class whose parts live in a file each: http_execute.cc (the run, the
/// client's requests and the waits between them), http_holds.cc (the faults carried out while a step waits,
/// and the holds between replicas) and http_run_end.cc (the answers still owed: a request the client gave
/// up on, the requests parked at a hold, and the client's retries at the end).
#include "supervisor/controller.h"
#include "supervisor/http_client.h"
#include "supervisor/http_hold.h"
#include "supervisor/http_replicas.h"
#include "supervisor/processes.h"
#include "supervisor/workspace_impl.h"

#include "history/history.h"
#include "plan/schedule.h"
#include "proxy/hub.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace idem {

/// The server processes of one HTTP execution and the client that writes to them.
class HttpLoop {
public:
  /// `holds`: the learned hold point of each timed-out request (by op); `rehearsal`: the run only learns them
  /// (no settling, no final state).
  HttpLoop(Workspace::Impl& ws, History& h, const Schedule& s, const std::map<int, std::map<std::string, std::string>>& fields,
           std::map<int, HoldPoint> holds = {}, bool rehearsal = false);

  void run();

private:
  using Clock = std::chrono::steady_clock;
  using milliseconds = std::chrono::milliseconds;

  /// Nothing moved (no step, no reply) for this long while a gate holds a step and a request waits: the
  /// server makes the waiting request wait for the held one, so the gate opens.
  static constexpr milliseconds kGateQuiet{300};
  /// Nothing moved for this long while a hold holds a step and a request waits, with no other step in
  /// flight: the server may not have begun the request yet (a loaded machine), so a hold ends later than
  /// after kGateQuiet, which is for a step that waits on the held one (a lock).
  static constexpr milliseconds kHoldQuiet{2000};

  /// A request of the client on its own thread.
  struct Flight {
    int id = 0;
    std::unique_ptr<HttpCall> call;
    std::thread thread;
    std::atomic<bool> done{false};
    HttpAnswer answer;
    bool gaveUp = false;   ///< the client timed out: its answer is late
    bool abandoned = false; ///< the client gave up waiting and closed it (outcome `timeout`): overdue()
    int key = 0, body = 0;
    std::string server; ///< the process it was written to (s1, …)
    std::chrono::steady_clock::time_point launched = std::chrono::steady_clock::now();
    bool parked = false; ///< a hold holds it: the client went on without its answer
    std::optional<std::chrono::steady_clock::time_point> due; ///< when the client gives up on it (overdue())
    size_t seen = 0;     ///< the history's size when overdue() last looked at it
    uint64_t moved = 0;  ///< the controller's activity count when overdue() last looked

    ~Flight() {
      if (thread.joinable()) {
        call->cancel();
        thread.join();
      }
    }
  };

  // http_execute.cc

  /// Ends every request, the server and whatever it started.
  void stop();
  milliseconds remaining() const;
  /// A request without its answer that no hold parked (one the client gave up on too: it is waited for at
  /// the end of its hold).
  bool unanswered() const;
  /// A request the client is waiting for (not one it gave up on).
  bool waiting() const;
  /// Until the server has no step in flight at PostgreSQL or Valkey and nothing moved for `still`: what a
  /// request set going is over before the next one is written. With `startedAfter`, also until something
  /// moved after that activity count (a request whose answer the client did not wait for: the server may
  /// not have begun it yet). Bounded (kQuietBound).
  void quiet(milliseconds still = milliseconds(10), std::optional<uint64_t> startedAfter = std::nullopt);
  std::string keyValue(int key) const;
  std::string bodyOf(int event, bool reordered = false) const;
  std::string refOf(int event) const;
  /// Writes a request to replica `replica` on its own thread; `how` is what the client does with the answer.
  Flight& launch(int replica, int op, const std::string& role, int key, int body, std::optional<std::string> header,
                 ClientOp::Wait how, int burst = 0, std::function<void()> barrier = {}, bool afterRetention = false,
                 const ClientOp* send = nullptr);
  /// Records the answer of a finished flight and forgets it.
  void finish(Flight& f);
  std::string roleOf(int key, int body);
  /// Lets the declared retention pass (from now: the key's last request has ended), so that the next
  /// request may find its key forgotten.
  void waitRetention(int64_t aged = 0);
  void play(int op, const ClientOp& c);
  /// Arms the gate at the timed-out request's last step before its answer (learned by the rehearsal; its
  /// COMMIT when the rehearsal's request made no step).
  void holdAtLastStep(int op);
  /// `copies` requests on as many connections, written together once all are connected; every COMMIT is
  /// held until each copy still running waits at one (or nothing moves), so their transactions overlap.
  void burst(int op, const ClientOp& c);
  /// Watches the run until `done()`: restarts a server that ended, opens a gate that would hang, and
  /// ends the run at the deadline.
  template <class Done>
  void pump(Done done);

  // http_holds.cc

  /// What the controller leaves to the supervisor while a step waits: a restart fault's server restart (forget
  /// and age are refused for HTTP scenarios), and a pause's end once its time (its MS, else kHttpPauseMs) has
  /// passed: the controller wakes the server (SIGCONT) before the step goes on.
  void tend();
  /// A restart fault: restarts the server while the proxy refuses connections to it (as its own port would),
  /// and notes the server process's connections so far, to tell once it ends whether it reconnected.
  void restartServer(const Fault& f);
  /// A hold (or a pause) that ends at another process's point or at the others' idleness: the client does
  /// not wait for the request it holds, and goes on with the next one.
  static bool parks(const Controller::ActiveHold& h) { return h.fault.args.size() != 1 && !(h.pause && h.fault.args.empty()); }
  /// Whether a hold that began after `f` was written holds a step of `f`'s process: `f` waits at it.
  bool heldAt(const Flight& f) const;
  /// Waits for `f`'s answer, or until a hold holds it: then the client goes on (true: it has its answer).
  bool answerOrPark(Flight& f);
  std::set<int64_t> holdsNow() const;

  // http_run_end.cc

  /// A request the client gave up on (a timeout): its hold lasts until the next request has its answer. One a
  /// delay fault holds stays in flight for the delay's time: unless `mustEnd`, the client does not wait for it
  /// (its next requests, its retries at the end, go on meanwhile); it reads its answer once it comes.
  void endLate(const std::string& why, bool mustEnd = true);
  /// After a request: a hold released by idleness that was holding before it began is released now (every
  /// other process is idle: the request has its answer), and a parked request no hold holds any more gets
  /// its answer. `end`: the client's requests are over, every hold is released.
  void settleParked(const std::set<int64_t>& before, bool end);
  /// The client's retry policy at the end: a key with no final 2xx answer to its own payload is sent again
  /// (same key, same payload) every kRetryEvery while the answer is the in-flight status, a 5xx or no
  /// answer, for the declared lease and kLeaseMargin more, and while a timed-out request of the key a delay
  /// holds has not had its answer. What it got then is what the checkers judge.
  void settle();
  /// Sends key `key` with its own payload to `replica()` until the answer is definite (a 2xx or 4xx other than
  /// the in-flight status, a stored 5xx), for the declared lease and kLeaseMargin more (again from a fault
  /// that cut one short). `untilCompleted` (the retries at the end): also until the key has a 2xx answer
  /// from any request; else (a look) again only after an answer a fault cut short. An answer that has not
  /// come after the lease and kGiveUpAfter more with no fault meanwhile is given up (`timeout`), and asked
  /// no more. Returns whether the last answer was definite.
  bool askUntilDefinite(int key, const std::function<int()>& replica, bool afterRetention, bool untilCompleted);
  /// The client's patience with a request it waits for: whether the declared lease and kGiveUpAfter more have
  /// passed since it was written with nothing moving while its server process waits on a server (a step of
  /// it in flight at PostgreSQL or Valkey: a lock wait), counted again from each step or reply of any process
  /// (a server busy on a loaded machine still makes its steps), each fault, each answer to another request
  /// and each moment the harness held something itself (a hold, a gate, a delay, a request parked or timed
  /// out and still due). Past it, the server holds the request for good (a lock nobody will release).
  bool overdue(Flight& f);
  /// The client gives up on `f` and closes it (its outcome is `timeout`); the reason is noted.
  void abandon(Flight& f);
  /// Waits for `f`'s answer, or gives up on it once it is overdue.
  void answerOrGiveUp(Flight& f);
  /// With two replicas or more, the client's last look once its retries are over: every key whose own
  /// payload got a final 2xx answer is sent once more (same key, same payload) to each replica, which must
  /// replay that answer. A replica that cannot (a lock the key's first request left held on another
  /// replica's session, an answer kept in one process's memory) shows here. A key first sent longer ago
  /// than the declared retention (a short one) is sent as after the retention: it may have been forgotten.
  void lookAgain();
  /// With one replica whose server took session-level advisory locks (held until unlocked or the session
  /// ends): each key with a final 2xx answer is looked at once more while the look at another such key is
  /// held before its first SELECT, keeping a connection of the server's pool busy, so that the pool hands
  /// the look another session. One request at a time reuses one pooled session, which hides a lock an error
  /// path left on it; here it shows.
  void lookBesideABusyConnection();
  /// Whether the declared retention may have passed for `key` since its first request: a look at it is sent
  /// as after the retention.
  bool mayBeForgotten(int key) const;

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
  std::map<int, Clock::time_point> firstSent_; ///< key -> when its first request was written
  std::vector<std::unique_ptr<Flight>> flights_;
  Flight* late_ = nullptr;          ///< a request the client gave up on, held in flight
  std::vector<Flight*> parked_;     ///< requests whose replica a hold holds: the client went on (http_holds)
  HttpReplicas servers_;
};

template <class Done>
void HttpLoop::pump(Done done) {
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
      // The server makes the waiting request wait for a held one (a lock, a "wait" policy): a hold ends. At
      // once when a step other than the held ones waits at a server; else the server may not have begun.
      const auto holds = ctl_.activeHolds();
      const bool stepWaits = ctl_.inflightAll() > ctl_.gated() + static_cast<int>(holds.size()) + ctl_.delayed();
      const milliseconds quiet = stepWaits ? kGateQuiet : kHoldQuiet;
      if (Clock::now() - moved >= quiet) {
        for (const auto& h : holds)
          if (parks(h))
            ctl_.releaseHold(h.token.id, fmt::format("nothing moved for {} ms while a request waits for its answer "
                                                     "(the held one may hold what it waits for)", quiet.count()));
        moved = Clock::now();
      }
    }
    if (remaining().count() == 0)
      throw HttpRunLimit{"deadline", fmt::format("deadline of {} ms reached while the client waited for an answer; raise --deadline",
                                             opt_.deadline.count())};
  }
}

} // namespace idem
