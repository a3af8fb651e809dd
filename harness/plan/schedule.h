#pragma once
/// A schedule is a pure value: everything needed to execute one run of a scenario against a target.
/// Generating, shrinking, saving and replaying a schedule start no process.
#include "plan/client_op.h"
#include "plan/fault.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <functional>
#include <string>
#include <vector>

namespace idem {

/// One business event. `fields` holds every field of the scenario except those generated at execution
/// time (kind "uuid", e.g. event_id: fresh for every execution so that marks left by an earlier run,
/// such as seen:<event_id> keys in a shared Valkey, can never collide).
struct Event {
  int n = 0; ///< 1-based, the producer's numbering
  std::map<std::string, std::string> fields;
};

/// One stream entry the producer sends. Several entries of the same event are producer retries.
/// The producer sends the entries of phase p only once everything it sent before is delivered and
/// acknowledged, so a later phase models a retry that arrives long after the original was acked.
struct StreamEntry {
  int event = 0; ///< Event::n
  int phase = 1; ///< 1-based
  /// Sent while what came before it is still being worked on: once every entry sent before it has been
  /// delivered to some consumer, not acknowledged (a producer that times out and sends again while a
  /// replica holds the original). Entries after it in its phase go with it. The first entry of a phase
  /// waits for its phase's rule instead.
  bool inflight = false;
};

enum class RestartStyle {
  NewName,  ///< a killed consumer is replaced by a process with a fresh name (recovers with XAUTOCLAIM)
  SameName, ///< ... by a process with the same name (replays its own pending list, XREADGROUP from 0)
};

struct Schedule {
  std::string scenario;
  std::string target; ///< informational; replay may override
  uint64_t seed = 0;
  std::vector<Event> events;
  std::vector<StreamEntry> stream; ///< in stream order (consumer scenarios)
  /// HTTP scenarios: the client's requests, in order (plan/client_op.h); the stream is then empty.
  std::vector<ClientOp> client;
  std::vector<Fault> faults;      ///< at most one per step point (fault.h)
  RestartStyle restart = RestartStyle::NewName;
  /// Consumer processes that run at once (1 to kMaxConsumers), labelled c1, c2, … in the order they start;
  /// a killed one is replaced by one new process (its label the next number).
  int consumers = 1;
  /// HTTP: server replicas that run at once (1 to kMaxReplicas), labelled s1..sR, each with its own PORT and
  /// proxies; a killed one is replaced by a new process (its label the next number after every replica's
  /// and replacement's so far) that serves the same replica. Requests name theirs (ClientOp::replica).
  int replicas = 1;
  /// CLAIM_IDLE_MS for this schedule's consumers, when it must not be the run's (--claim-idle-ms): a race
  /// class that needs no claim to take a held process's entries runs with a long one. 0: the run's.
  int claimIdleMs = 0;
  /// How idemproof chose the event values, for reports: "" when they are as written (the scenario's default
  /// schedule with --scenario-values, a schedule file), else the scheme (scenario/decodable.h).
  std::string values;
  /// The sink's policy for keys in this run, "honour" or "ignore", over the scenario's (and a command's
  /// --sink-policy): compare runs each target under both (docs/sink.md). "": the scenario's or the flag's.
  std::string sinkPolicy;

  int phases() const;
  int retries() const; ///< stream entries beyond the first of each event
  int inflight() const; ///< stream entries sent while earlier ones are in work (StreamEntry::inflight)
  bool http() const { return !client.empty(); }
  /// "3 events, 1 retry, faults [after:COMMIT#3], restart new-name" (", 2 consumers" when more than one);
  /// HTTP: "3 requests [send 1, send 1 (timeout), burst 4 of 1], faults [after:COMMIT#1]" (", 2 replicas" when
  /// more than one)
  std::string summary() const;
};

std::string toString(RestartStyle r);
RestartStyle restartStyleFromString(const std::string& s, const std::string& what);

/// The version of the schedule format written; version 1 (faults under "kills", kill points only) still
/// loads.
inline constexpr int kScheduleVersion = 2;

/// Bounds of a schedule file's numbers: an event number and a phase are whole numbers from 1 to these.
inline constexpr int kMaxEventNumber = 1000000;
inline constexpr int kMaxPhase = 1000000;
/// The most consumer processes a schedule runs at once.
inline constexpr int kMaxConsumers = 4;
/// The longest CLAIM_IDLE_MS a schedule may set (one hour).
inline constexpr int kMaxClaimIdleMs = 3600000;

void to_json(nlohmann::json& j, const Schedule& s);
/// Throws UsageError naming `what` (a file path) and the field; an unknown version is named.
Schedule scheduleFromJson(const nlohmann::json& j, const std::string& what);

/// The highest process label (cN) a run of `s` can reach: its consumers, plus one replacement for each fault
/// that can end a process other than `except` (a restart can end every consumer at once; holds and delays
/// end none). A fault naming a process beyond it could never fire.
int reachableProcesses(const Schedule& s, const Fault* except = nullptr);
/// Throws UsageError when fault i of `s` names a process (its own cN, or the cM a hold waits for) that no
/// run of `s` can start; `what(i)` names the fault for the message (a flag, a file and field). Asked where
/// users hand schedules over (run's --crash, replay's file), not of histories read back.
void checkFaultProcesses(const Schedule& s, const std::function<std::string(size_t)>& what);

} // namespace idem
