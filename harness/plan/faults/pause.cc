/// pause: the consumer's process group is stopped (SIGSTOP) at the step and woken (SIGCONT) later, as a
/// process frozen by a long GC, a VM migration or a laptop lid: its request (`before:`) or its reply
/// (`after:`, the request has taken effect) waits at the proxy meanwhile, and goes on once it is awake.
///
///   pause:before:COMMIT#1                    for the broker's hand-over time (Broker::pauseMs)
///   pause:c1:after:SELECT#2:1500             for 1500 ms
///   pause:before:COMMIT#1:c2:after:XACK#1    until process c2 passes (after) or reaches (before) its point
///
/// Unlike a hold, the process's own clocks run on while it sleeps and its heartbeats stop: the broker
/// hands what it was delivered to another consumer (Valkey's XAUTOCLAIM idle time, NATS's AckWait, Kafka's
/// session timeout), and when it wakes it finishes work that is no longer its own — a zombie. A pause that
/// waits for another process's point ends, as a hold does, when every other process is idle, when one of
/// them waits on a PostgreSQL lock (the paused process's open transaction may hold it), or after the stall
/// time; a timed one ends at its time or on such a lock wait. The supervisor sends the signals to the
/// process group (supervisor/processes.h), and wakes a paused group before any stop or kill.
#include "plan/faults/kinds.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

namespace idem::faults {

namespace {

constexpr const char* kForm = "pause:[cN:]before|after:VERB#k[:MS | :cM:before|after:VERB#j]";

constexpr Release kPauseRelease{"pause", "ends at", "stops", 600000, kForm};

class Pause : public FaultKind {
public:
  std::string name() const override { return "pause"; }
  std::string usage() const override {
    return "pause:before|after:VERB#k[:MS | :cM:before|after:VERB#j]   SIGSTOP the consumer at the step until MS ms "
           "pass (default: long enough for the broker to hand its entries to another consumer) or cM reaches its "
           "point, then SIGCONT";
  }
  void check(const Fault& f, const std::string& what) const override {
    kPauseRelease.check(f, what);
  }
  Effect effect(const Fault& f) const override {
    return kPauseRelease.effect(f, Effect{Effect::Action::Pause, {}, {}, {}, {}, false});
  }
  /// An HTTP server is stopped at its step as a consumer is; with one replica only for a time (its own, or
  /// kHttpPauseMs): there is no other process whose point could end it; with two, also until another's point.
  bool atHttpServer() const override { return true; }
  /// One more delivery: another consumer takes what the paused one holds, and the paused one finishes it.
  int weight() const override { return 1; }
  /// At every swept point, before and after, for the broker's hand-over time.
  std::optional<Fault> sweptAt(const Fault& point, const std::string&, int) const override {
    Fault f = point;
    f.kind = name();
    f.args.clear();
    return f;
  }
  std::string phrase(const Fault& f, const std::string& process,
                     const std::function<std::string(const std::string&)>&) const override {
    return process + " paused (SIGSTOP) at " + f.str();
  }
  /// Seconds a schedule on Kafka (its session timeout), and existing seeds keep their counterexamples:
  /// asked for with --faults pause.
  bool drawnByDefault() const override { return false; }
  /// Alone it shows how the consumer copes with waking; with two, what the zombie does to the other's work.
  std::vector<int> comparedConsumers() const override { return {1, 2}; }
  FaultClass sweepClass(const Fault&) const override {
    return {"pause", "paused past the claim time, another consumer claimed",
            "pause:before|after:VERB#k: the consumer's process group stopped (SIGSTOP) while the broker hands its "
            "entries to another consumer, then woken (SIGCONT)"};
  }
};

} // namespace

std::unique_ptr<FaultKind> makePause() { return std::make_unique<Pause>(); }

} // namespace idem::faults
