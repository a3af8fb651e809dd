#pragma once
/// The run's side of the proxies: counts steps by verb over the whole run (COMMIT#3 is the third COMMIT
/// any consumer sent), records every step in the history, fires the schedule's kill points by SIGKILLing
/// the owner's process group on the proxies' I/O thread, before any other byte moves, and keeps what the
/// supervisor needs to tell a busy consumer from an idle one.
#include "core/history.h"
#include "plan/kill_point.h"
#include "proxy/hub.h"

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace idem {

class Controller : public proxy::StepListener {
public:
  using Clock = std::chrono::steady_clock;

  Controller(History& history, std::vector<KillPoint> kills);
  void setHub(proxy::Hub* hub) { hub_ = hub; }

  /// Registers a consumer process: its owner id in the hub, its name and its process group.
  void addProcess(int owner, std::string name);
  void setPid(int owner, pid_t pgid);

  bool onRequest(int owner, proxy::Server server, int conn, const proxy::StepInfo& step,
                 proxy::StepToken& token) override;
  bool onReply(int owner, const proxy::StepToken& token, const proxy::ReplyInfo& reply) override;
  void onCut(int owner, const proxy::StepToken& token, proxy::CutKind how) override;
  void onOpaque(int owner, proxy::Server server, int conn, const char* direction, uint64_t offset,
                const std::string& reason) override;

  /// What the supervisor needs to know about a process, read from any thread.
  struct ProcessState {
    bool killed = false;           ///< a kill point fired on it (its process group was signalled)
    std::string killPoint;
    int steps = 0;                 ///< requests seen (completed or not)
    int inflight = 0;              ///< requests without a reply yet
    int inflightBlocking = 0;      ///< of which blocking reads
    std::string waitingFor;        ///< the oldest non-blocking request in flight: "COMMIT#3 (pg)"
    Clock::time_point waitingSince;
    bool lastWasEmptyRead = false; ///< its latest step is a read that delivered nothing, and none is in flight
    std::set<std::string> held;    ///< entries delivered to it that it has not acknowledged
    /// Entries a read handed to it again while it already held them, and how often (it re-reads what it
    /// does not finish: three times or more is a spin).
    std::map<std::string, int> handedAgain;
    Clock::time_point lastActivity; ///< its latest request or reply
    Clock::time_point spawned;
  };
  ProcessState state(int owner) const;
  /// Kill points not fired yet.
  std::vector<KillPoint> pendingKills() const;
  /// The last time any process did work: a request other than a read, or a read that delivered entries.
  Clock::time_point lastWork() const;
  /// Waits until the activity counter differs from `seen` (a step, a kill) or the timeout passes;
  /// returns the counter.
  uint64_t waitForActivity(uint64_t seen, std::chrono::milliseconds timeout);

private:
  struct Inflight {
    int owner;
    std::string server;
    int conn;
    proxy::StepInfo step;
    int k;
    int64_t t_req_us;
    Clock::time_point sent;
  };
  /// Fires kill point `point` at step `step` (JSON of the step, outcome set here): SIGKILLs the owner's
  /// process group, then records the step and either the kill (the signal was delivered) or a note saying
  /// why the point did not fire (no process id yet, the process already gone). `before`: the request was
  /// withheld; else it reached the server and its reply is withheld.
  void fireLocked(std::unique_lock<std::mutex>& lock, int owner, const std::string& point, nlohmann::json step,
                  bool before);
  /// The kill point (when, verb, k) if the schedule has it and it has not fired yet; removes it.
  std::optional<std::string> takeKill(KillPoint::When when, const std::string& verb, int k);
  nlohmann::json stepJson(const Inflight& f) const;
  /// Ends a step in flight (reply, cut): the owner's counters and what it waits for.
  void endInflight(ProcessState& st, const Inflight& f);
  /// The step a process waits for: its oldest non-blocking request in flight.
  void updateWaiting(int owner, ProcessState& st);

  History& history_;
  proxy::Hub* hub_ = nullptr;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable pidCv_;
  uint64_t activity_ = 0;
  std::vector<KillPoint> kills_;     // not fired yet
  std::map<std::string, int> counts_; // verb -> occurrences so far
  std::map<int64_t, Inflight> inflight_;
  int64_t nextToken_ = 1;
  std::map<int, std::string> names_;
  std::map<int, pid_t> pids_;
  std::map<int, ProcessState> states_;
  Clock::time_point lastWork_ = Clock::now();
};

} // namespace idem
