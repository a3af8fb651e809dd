#pragma once
/// The pure model `check` searches: a Shape is the raw draws of one schedule (how many events, their
/// fields, retries and where they go, out-of-order delivery, kill points, restart style), generated and
/// shrunk by RapidCheck; materialize() turns it into a Schedule. No process starts here.
///
/// Every draw shrinks toward something simpler: fewer events (any of them can go), fewer retries and
/// kills, one key, the smallest int and the first pick, a retry right after its original and in phase 1,
/// versions in order, kill k = 1 and "after", new-name restarts.
#include "plan/schedule.h"
#include "scenario/scenario.h"
#include "search/kill_model.h"

#include <rapidcheck/Gen.h>
#include <rapidcheck/Shrinkable.h>

#include <cstdint>
#include <vector>

namespace idem {

/// What the generator may draw. Counts are uniform in their range unless said otherwise.
struct ModelParams {
  int minEvents = 1, maxEvents = 6;
  /// Producer retries of each event: 0 (70%), 1 (20%) or 2 (10%) extra stream entries.
  int maxRetriesPerEvent = 2;
  int maxPhases = 3;            ///< a retry goes to phase 1..maxPhases (later: long after the original was acked)
  int minKills = 0, maxKills = 2;
  bool drawRestart = true;      ///< draw new-name / same-name (else always new-name)
  /// The fault kinds a fault is drawn from (check --faults); the first is what a fault's kind shrinks to.
  std::vector<std::string> faultKinds{"kill"};
  int delayMs = 100;            ///< the length of a delay fault (history/trace.h sweepDelayMs)
  /// HTTP scenarios: the declared lease_ms; a delay drawn past the lease (Shape::Kill::pastLease) lasts it and
  /// kPastLeaseMs more. 0: none drawn.
  int64_t leaseMs = 0;
  /// A scenario with a sink: its declared timeout_ms (SinkSpec::timeoutMs); a delay drawn past it
  /// (Shape::Kill::pastLease) at a CALL lasts it and kPastLeaseMs more. 0: none drawn.
  int64_t callTimeoutMs = 0;
  /// Consumer processes that run at once, uniform in [min, max]; shrinks toward min. With 2 or more,
  /// holds are drawn (0, 1 or 2 of them, at most maxHolds: most concurrency bugs need at most two
  /// preemptions), faults name their process (cN:VERB#k), and a retry may be sent in flight.
  int minConsumers = 1, maxConsumers = 1;
  int maxHolds = 2;             ///< 0: no holds (check --faults without hold)
  int holdMs = 100;             ///< a hold released by time lasts this long (materialize of release 1; not drawn)
  /// HTTP scenarios: requests per schedule, uniform in [1, maxRequests], and a burst's most copies.
  int maxRequests = 5;
  int maxBurst = 8;
  /// HTTP scenarios: server replicas per schedule, uniform in [min, max]; shrinks toward min. With 2 or more,
  /// each request draws the replica it goes to and each burst whether its copies are split across them.
  int minReplicas = 1, maxReplicas = 1;
  /// Slow work past an acknowledgement, from the fault-free trace (classShapes): a delay of `slowWorkMs` at a
  /// step of c1's work (`work`#k) before it acknowledged several entries at once, and c1 killed right after
  /// its next acknowledgement (`ack`#ackK): an acknowledgement on a timer, or of a batch, that covers an entry
  /// still in work loses it. Empty: none planned.
  struct SlowWork {
    std::string work;
    int k = 1;
    std::string ack;
    int ackK = 1;
  };
  std::vector<SlowWork> slowWork;
  int slowWorkMs = 6000;
};

struct Shape {
  struct Retry {
    int phase = 1;  ///< 1..maxPhases
    int offset = 0; ///< phase 1: how far after the original; later phases: order among that phase's entries
    bool inflight = false; ///< sent once what came before it is delivered (StreamEntry::inflight)
  };
  struct Event {
    std::vector<int64_t> draws; ///< one per key / int / pick field, in the scenario's field order
    int order = 0;              ///< sort key among the same key's versions (versioned scenarios)
    std::vector<Retry> retries;
  };
  struct Kill {
    int verb = 0;        ///< index into KillModel::verbs(), modulo its size
    bool before = false;
    int k = 1;           ///< 1-based; taken modulo the verb's bound for the schedule's event count
    int kind = 0;        ///< index into ModelParams::faultKinds, modulo its size (0: the first, kill)
    /// With several consumers: c(1 + process mod consumers), its own k. With an outbox relay (KillModel::relay)
    /// process mod (consumers + 1) == consumers is r1, its verb and k from the relay's model.
    int process = 0;
    /// HTTP scenarios: a delay lasts the declared lease_ms and kPastLeaseMs more instead of ModelParams::delayMs
    /// (a lock whose lease runs out while its holder still works); at a sink's CALL, its callTimeoutMs and
    /// kPastLeaseMs more (an answer later than the consumer waits). Shrinks toward false.
    bool pastLease = false;
    /// A delay lasts ModelParams::slowWorkMs (class shapes of slow work only; never drawn).
    bool slowWork = false;
  };
  /// A hold (plan/faults/hold.cc) on one process's step, released by the others' idleness (release 0),
  /// by time (1: ModelParams::holdMs; never drawn, as it leaves the order to timing) or when another process
  /// reaches a point (2: `other`, `untilVerb`, `untilBefore`, `untilK`) of a verb that can conflict with the
  /// held one (KillModel::conflicting; untilVerb indexes those; none: released by idleness).
  struct Hold {
    int process = 0; ///< c(1 + process mod consumers)
    int verb = 0;
    bool before = true;
    int k = 1;
    int release = 0;
    int other = 0;   ///< the releasing process: the (1 + other mod (consumers - 1))-th after the held one
    int untilVerb = 0;
    bool untilBefore = false;
    int untilK = 1;
  };
  /// HTTP scenarios: one request of the client (plan/client_op.h). Every draw shrinks toward a plain send
  /// of the first key that waits for its answer.
  struct Request {
    int kind = 0;      ///< 0 send, 1 burst, 2 no-key, 3 bad-key (weighted: sends most)
    int key = 0;       ///< the key: events[key mod events]
    int wait = 0;      ///< send: 0 answer, 1 timeout, 2 cut after the request, 3 after the headers, 4 mid-body
    bool mismatch = false; ///< send: another payload under the key; burst: the last copy's
    int copies = 2;    ///< burst: 2..ModelParams::maxBurst
    int malformed = 0; ///< bad-key: empty, unquoted token, unterminated quote
    bool late = false; ///< send of a key used before: after the retention (only when it is at most 2 s)
  };
  std::vector<Event> events;   ///< HTTP: the payloads, one key each
  std::vector<Request> requests; ///< HTTP only
  std::vector<Kill> kills;
  int keys = 1;          ///< how many of the scenario's keys the events use
  bool sameName = false;
  int consumers = 1;     ///< processes at once, clamped to 1..kMaxConsumers
  std::vector<Hold> holds; ///< ignored with one consumer
  /// HTTP: server replicas, clamped to 1..kMaxReplicas, and per request (by position) where it goes: replica
  /// (route mod 3) mod replicas + 1, and a burst's copies split across the replicas when route >= 3. Drawn
  /// apart from the rest (after it), so that with one replica a seed draws the schedules it always drew.
  int replicas = 1;
  std::vector<int64_t> routes;
};

/// The generator of shapes for a scenario and a target's kill model.
rc::Gen<Shape> shapeGen(const Scenario& sc, const KillModel& km, const ModelParams& p);

/// The random source of case `index` of a search with `seed`: independent of every other case and of
/// the order cases run in, so the same seed gives the same schedules whatever the parallelism.
rc::Shrinkable<Shape> generateCase(const rc::Gen<Shape>& gen, uint64_t seed, uint64_t index);

/// The schedule a shape stands for (scenario set, target empty, seed = `seed`). Kill points whose verb
/// the model does not reach with this many events are left out, and so is a second point on one step
/// (before:V#k withholds the step that after:V#k waits for). A fault's kind comes from `p.faultKinds`: an
/// error acts before its step, a forget after it, a delay lasts `p.delayMs`.
///
/// With several consumers, c1 alone receives the first batch of the stream (the supervisor starts c2 once
/// c1 has entries), so its faults and holds are bounded by the events of that batch and mean the same
/// work in every replay; the other processes' points are bounded by one event's steps, and a point they
/// never reach is coverage loss, like any generated point.
Schedule materialize(const Shape& s, const Scenario& sc, const KillModel& km, uint64_t seed,
                     const ModelParams& p = {});

/// The field of a versioned scenario whose per-key versions may be delivered out of order ("" if none):
/// the `of` of its first `version` field.
std::string versionKeyField(const Scenario& sc);

} // namespace idem
