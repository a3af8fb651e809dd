#pragma once
/// When a consumer process can still act by itself, and when a run with its processes alive is over: a pure
/// rule over what the proxies saw of each process, so that it is the same in every run and is tested on
/// written step sequences (tests/unit/supervisor/liveness_test.cc). execute.cc applies it to the live
/// processes of a run; docs/timing.md and docs/verdicts.md state it for users.
///
/// The rule is broker-neutral. A *delivery* is a read whose reply handed the process work (on a stream:
/// XREADGROUP, XAUTOCLAIM, XCLAIM, its own pending list); *settling* it is what tells the broker the work is
/// done (XACK). A process that holds delivered work it has not settled is busy, whatever its latest step
/// was: it may be calling out for each entry, for as long as it needs. Only a process that holds nothing can
/// be idle, and only a run whose live processes are all idle — or spinning: handed the same held entries
/// again and again, never settling them — can be proven stuck.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace idem::liveness {

using Clock = std::chrono::steady_clock;

/// Milliseconds from `a` to `b`.
int64_t msBetween(Clock::time_point a, Clock::time_point b);

/// The least time a stall of live processes that a fault other than a kill reached lasts before it is proven
/// stuck (they may recover on a timer of their client's: Bunny reconnects 10 s after a dropped connection,
/// the RabbitMQ Java client 5 s, nats.js 2 s); --stall-timeout lengthens it, never shortens it.
inline constexpr int64_t kClientRecoveryMs = 15000;
/// A time in a reason's words: "58 s" / "450 ms".
std::string span(int64_t ms);

/// One live process, as the proxies saw it.
struct Process {
  std::string label;                ///< "c1"
  int steps = 0;                    ///< requests it made
  int inflight = 0;                 ///< requests without a reply yet
  int inflightBlocking = 0;         ///< of which blocking reads (XREADGROUP … BLOCK, BLPOP, …) and keep-alives
  bool lastWasEmptyRead = false;    ///< its latest step is a read that delivered nothing
  bool waiting = false;             ///< its broker pushes it entries (an AMQP consumer)
  /// Its latest step ended with its connection cut under it (a dropped connection, a server restart, a
  /// server that closed it) and it has made no request since but its session's set-up (StepInfo::configures):
  /// "XREADGROUP#2 (valkey)", else "".
  std::string cutAt;
  size_t held = 0;                  ///< entries delivered to it that no process has settled yet
  /// Entries its broker settled as it delivered them (no-ack) came to it, and its latest request of work
  /// or such delivery is more recent than the stall time: it may be working on them still (views(),
  /// execute.cc).
  bool workingUnacknowledged = false;
  std::set<std::string> spinning;   ///< held entries handed to it again three times or more
  /// When the last of `spinning` was first handed to it again.
  std::optional<Clock::time_point> spinSince;
};

/// Idle: it holds nothing, and it can't act before a reply reaches it (only blocking reads in flight, and
/// keep-alives: a Heartbeat queued behind a blocking Fetch on one connection waits as long as it) or
/// before its own timer fires (its latest step was a read that delivered nothing, or its connection was cut
/// under it: it polls or reconnects when it wants to). Busy: anything else — a request in flight that is not
/// a blocking read, delivered work it has not settled (or work its broker settled as it delivered it, for the
/// stall time after its latest request of work), silence before its first request, silence after a step of
/// its work.
bool idle(const Process& p);

/// Why a busy process is busy, for people: "holding 3 entries", "waiting for a reply", "starting" ….
std::string busyWhy(const Process& p);

/// The broker's side and the run's side of one moment of a run.
struct Moment {
  std::vector<Process> live;
  int64_t pending = 0;         ///< entries delivered to the group and not settled
  bool delivered = true;       ///< every entry sent so far was delivered to the group
  bool toStart = false;        ///< processes of the schedule not started yet
  Clock::time_point lastWork;  ///< the latest work of any process (a step other than a read, a delivery),
                               ///< spawn, exit or send
  /// Entries were sent while a blocking read was in flight that the broker may hold for its whole wait (the
  /// embedded Kafka broker's Fetch): no process idle before then is proven idle for them.
  std::optional<Clock::time_point> readsHeldUntil = std::nullopt;
  /// The broker counts entries delivered that no reply through a proxy has carried yet: a reply on its way
  /// (a read the server answered, which the proxy has not decoded). Every process parked in a blocking read
  /// then proves nothing — the one waiting may be about to get them —: the reply is waited for, the stall
  /// time at most.
  bool unseen = false;
  /// A target with an outbox relay: its unsent outbox rows. The relay's work: while any is left the run is
  /// not settled, whatever the consumers do (the relay is no process of `live`).
  int64_t outbox = 0;
  /// A hold, a pause or a delay of the harness is active: a process waits on the harness, not on itself. No
  /// stall is proven meanwhile (a hold lasts the stall time at most: supervisor/holds.cc; a delay its time),
  /// and a spin counts from its end: what a broker redelivered while the harness held the process (a pull's
  /// answer delayed past AckWait) is no re-read it could have settled.
  bool harnessHolds = false;
};

struct Decision {
  enum class Kind {
    Working,  ///< go on
    Settling, ///< everything settled and every live process idle: waiting out the settle time
    Settled,  ///< everything settled, every live process idle for the settle time (or parked)
    Stalled,  ///< work left and no process will do it (every live process idle that long, or a spin)
  };
  Kind kind = Kind::Working;
  std::string why; ///< Stalled: "every consumer idle for 3027 ms with 4 entries pending"
  bool spin = false; ///< Stalled by a spin (entries re-read, never acknowledged), not by every process idle
};

/// The run-ending rule over a sequence of moments: keeps since when every live process is idle.
class RunEnding {
public:
  /// `settle`: quiet time that ends a settled run; `stall`: CLAIM_IDLE_MS + --stall-timeout, how long every
  /// live process must be idle (with no work by any) for work left to be a stall.
  RunEnding(std::chrono::milliseconds settle, std::chrono::milliseconds stall) : settle_(settle), stall_(stall) {}

  /// Decides at `now`. `parked` (asked only while the settle time has not passed: it reads /proc) says
  /// whether every live process provably can't act before the proxy hands it a reply (supervisor/parked.h).
  Decision observe(Clock::time_point now, const Moment& m, const std::function<bool()>& parked);

  /// The live processes changed (a restart after a stall, a process that ended): idleness counts anew.
  void reset() { allIdleSince_.reset(); }

private:
  std::chrono::milliseconds settle_, stall_;
  std::optional<Clock::time_point> allIdleSince_;
  /// The last moment the harness held a process (Moment::harnessHolds): a spin counts from then too.
  std::optional<Clock::time_point> heldAt_;
};

} // namespace idem::liveness
