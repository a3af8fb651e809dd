#pragma once
/// A real Controller fed written steps, as the proxies would report them (requests and replies, no
/// sockets), for the liveness and run-ending tests; and the run's moments with written times.
#include "supervisor/controller.h"
#include "supervisor/liveness.h"

#include "plan/fault.h"

namespace idem::test {

using namespace std::chrono_literals;

/// A Controller fed written steps of its processes (owner 1 is c1, owner 2 is c2), as the proxies report
/// them.
struct Steps {
  History history;
  Controller ctl;
  explicit Steps(std::vector<Fault> faults = {}) : ctl(history, std::move(faults)) {
    ctl.addProcess(1, "c1");
    ctl.addProcess(2, "c2");
  }

  /// A request of `owner`, in flight until reply() or cut().
  proxy::StepToken send(int owner, const std::string& verb, bool blocking = false,
                        std::vector<std::string> acked = {}) {
    proxy::StepInfo s;
    s.verb = verb;
    s.blocking = blocking;
    s.acked = std::move(acked);
    proxy::StepToken t;
    ctl.onRequest(owner, verb.rfind("X", 0) == 0 ? proxy::Server::Valkey : proxy::Server::Pg, 1, s, t);
    return t;
  }
  void reply(int owner, proxy::StepToken t, const std::vector<std::string>& delivered = {}, bool read = false) {
    proxy::ReplyInfo r;
    r.empty_read = read && delivered.empty();
    for (const auto& id : delivered) r.delivered.push_back({id, {{"n", "1"}}});
    ctl.onReply(owner, t, r);
  }
  /// A read that returns `delivered` (nothing: an empty read).
  void read(int owner, const std::string& verb, const std::vector<std::string>& delivered, bool blocking = false) {
    reply(owner, send(owner, verb, blocking), delivered, true);
  }
  void step(int owner, const std::string& verb) { reply(owner, send(owner, verb)); }
  void ack(int owner, const std::string& id) { reply(owner, send(owner, "XACK", false, {id})); }

  liveness::Process view(int owner) const { return ctl.livenessOf(owner); }
  bool idle(int owner) const { return liveness::idle(view(owner)); }
};

inline const auto t0 = liveness::Clock::time_point{} + 1h;

inline liveness::Moment moment(std::vector<liveness::Process> live, int64_t pending, liveness::Clock::time_point lastWork) {
  return {std::move(live), pending, true, false, lastWork};
}

inline const auto notParked = [] { return false; };

} // namespace idem::test
