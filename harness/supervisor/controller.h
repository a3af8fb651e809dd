#pragma once
/// The run's side of the proxies: counts steps by verb over the whole run (COMMIT#3 is the third COMMIT
/// any consumer sent), records every step in the history, and fires the schedule's kill points by
/// SIGKILLing the owner's process group on the proxies' I/O thread, before any other byte moves.
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
  Controller(History& history, std::vector<KillPoint> kills);
  void setHub(proxy::Hub* hub) { hub_ = hub; }

  /// Registers a consumer process: its owner id in the hub, its name and its process group.
  void addProcess(int owner, std::string name);
  void setPid(int owner, pid_t pgid);

  bool onRequest(int owner, proxy::Server server, int conn, const proxy::StepInfo& step,
                 proxy::StepToken& token) override;
  bool onReply(int owner, const proxy::StepToken& token, const proxy::ReplyInfo& reply) override;
  void onCut(int owner, const proxy::StepToken& token) override;

  /// What the supervisor needs to know about a process, read from any thread.
  struct ProcessState {
    bool killed = false;           ///< a kill point fired on it
    std::string killPoint;
    int steps = 0;                 ///< completed or started steps
    int inflight = 0;              ///< requests without a reply yet
    int inflightBlocking = 0;      ///< of which blocking reads
    std::chrono::steady_clock::time_point lastActivity;
  };
  ProcessState state(int owner) const;
  /// Kill points not fired yet.
  std::vector<KillPoint> pendingKills() const;
  /// Steps recorded so far (all processes).
  int totalSteps() const;
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
  };
  void killLocked(std::unique_lock<std::mutex>& lock, int owner, const std::string& point);
  /// The kill point (when, verb, k) if the schedule has it and it has not fired yet; removes it.
  std::optional<std::string> takeKill(KillPoint::When when, const std::string& verb, int k);
  nlohmann::json stepJson(const Inflight& f) const;

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
  int totalSteps_ = 0;
};

} // namespace idem
