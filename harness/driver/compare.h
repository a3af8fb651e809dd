#pragma once
/// Internal to `compare` and `demo`: the same classes of schedules run against several targets of one
/// scenario. Classes are values: the scenario's default schedule, generated schedules with retries, late
/// retries and a reordered stream (the same seeds for every target), and SIGKILLs of the consumer in
/// each gap between two of its steps (each target's own trace; a class that a target's trace does not
/// have is "n/a" for it).
#include "driver/commands.h"
#include "driver/progress.h"
#include "report/compare_section.h"
#include "report/report.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace idem::compare {

/// One class of schedules: a row of the matrix (report/compare_section.h).
using Class = CompareClass;

/// A fault at a point of a fault-free trace and its class.
struct ClassedPoint {
  Fault fault;
  /// Faults its schedule runs with it (slow:ack: the kill after the process's next acknowledgement).
  std::vector<Fault> also = {};
  Class cls = {};
  std::string server = {}, detail = {};
  int64_t opIndex = -1; ///< its step's Op::index in the fault-free history (TracePoint::opIndex)
};

/// The kill points of a fault-free history (history/trace.h: the points sweep runs), each in its class: the
/// gap between two steps of one consumer process ("after:COMMIT#2" and "before:XACK#2" are both "after
/// COMMIT, before XACK"). `startOnce`: a process's points up to its first read that delivered an entry
/// (before it) are one class, "before the first delivery" (its connections and a group's set-up: it holds
/// no entry yet); a process that never read an entry (a relay) keeps its gaps.
std::vector<ClassedPoint> classifyKillPoints(const std::vector<Op>& history, bool startOnce = false);

/// The faults of `kinds` other than kill at the points of a fault-free history (history/trace.h faultsAt),
/// classed by kind and moment: drop before a step, drop after it (the ambiguous commit), an error reply, a
/// delayed request, a delayed reply, a broker that forgets, a server restarted (per server).
std::vector<ClassedPoint> classifyFaultPoints(const std::vector<Op>& history, const std::vector<std::string>& kinds,
                                              int delayMs);

/// HTTP scenarios: a delay of `delayMs` (the declared lease and kPastLeaseMs more) before each step of a
/// fault-free history that is the first of its verb (the first request's own steps, mostly), class
/// "delay-past-lease": run on the default schedule with its first request timed out (pastLeaseSchedule), so
/// that the client's retries meet a server whose lock's lease ran out while its holder still works.
std::vector<ClassedPoint> classifyPastLeasePoints(const std::vector<Op>& history, int delayMs);
/// The default schedule `s` with its first request's client timing out (docs/http-contract.md).
Schedule pastLeaseSchedule(Schedule s);

/// How long class "slow:ack" delays a statement of the work: past the 5 s `auto.commit.interval.ms` that
/// librdkafka (confluent-kafka, node-rdkafka, the Go client) and the Java client commit offsets on by default.
inline constexpr int kSlowWorkMs = 6000;
/// Class "slow:ack", for a consumer that acknowledges several entries at once (an offset auto-commit on a
/// timer, a batch's commit, a multiple ack) — c1's first acknowledgement in the fault-free history settles
/// two entries or more it had not acknowledged: at each of c1's statements on the data before it (a
/// PostgreSQL step naming a table of the user's), a delay of kSlowWorkMs, and c1 killed right after its next
/// acknowledgement. An acknowledgement made meanwhile that covers the entry in work (an auto-commit of the
/// offsets a poll stored) loses that entry; one that covers only finished work is harmless. None for a
/// consumer that acknowledges each entry after its own work (the kill classes cover it).
std::vector<ClassedPoint> classifySlowWorkPoints(const std::vector<Op>& history);

/// At most `n` of `points` (all when n <= 0 or there are fewer), spread evenly, the first included.
std::vector<ClassedPoint> sample(const std::vector<ClassedPoint>& points, int n);

/// At most `n` of `points` (all when n <= 0 or there are fewer), each the middle of one of n equal parts:
/// a fault class spans the whole trace, and its middle parts are the consumer's work, not its start-up.
std::vector<ClassedPoint> sampleCentered(const std::vector<ClassedPoint>& points, int n);

/// The Op::index of each step of `history` that acknowledged entries.
std::set<int64_t> acksOf(const std::vector<Op>& history);

/// The point of a class judged by a later retry (FaultKind::judgedByLateRetry: age): after the trace's last
/// acknowledgement (`acks`: acksOf the fault-free history; XACK on Valkey, the last offset commit on Kafka),
/// once every event was handled; the last of `points` when none is there. Not simply the last point: a
/// consumer's shutdown steps (a Kafka member's LeaveGroup as it closes) come after it, and a run that retries
/// an event in a later phase keeps its consumer alive, so a fault at one never fires. `points` is not empty.
const ClassedPoint& lastAcknowledgement(const std::vector<ClassedPoint>& points, const std::set<int64_t>& acks);

/// A generated class and its schedules (the same for every target).
struct Generated {
  Class cls;
  std::vector<Schedule> schedules;
};
/// retry (event 2 sent twice), late-retry (the second copy in a later phase, after the first is
/// acknowledged), reorder (the stream shuffled): `runs` schedules of `events` events each, seeds seed,
/// seed+1, ...; and for a scenario with poison events, poison (the retry schedules with their last
/// event made poison).
std::vector<Generated> generatedClasses(const Scenario& sc, int runs, int events, uint64_t seed);

/// HTTP scenarios: the client behaviours, each a class of `runs` schedules whose payloads are drawn with
/// seeds seed, seed+1, … (docs/faults.md, "HTTP"):
///  http:retry            a key sent again after its answer
///  http:timeout-inflight the client gives up while the server works (held at COMMIT), retries at once
///  http:timeout-after    the same, retried only after the first completed
///  http:burst            8 identical requests at once on a barrier
///  http:mismatch         the key reused with another payload after completion
///  http:mismatch-inflight  ... while the first is in flight
///  http:mismatch-race    a burst of 4 whose last copy carries another payload (written once the others
///                        began: the losing path of the race)
///  http:missing-key      no key, an empty one, an unquoted or unterminated one (sf-string keys)
///  http:cut              the connection cut after the request, after the headers, mid-body; then a retry
///  http:after-retention  the key sent again once the declared retention passed (when it is at most 2 s)
std::vector<Generated> httpClasses(const Scenario& sc, int runs, uint64_t seed);

/// One schedule of a race class (several consumers, holds), for one target.
struct RaceSchedule {
  Class cls;
  Schedule schedule;
};

/// The race classes for a target, from its fault-free single-consumer history of `base` (the scenario's
/// default schedule with the target's values). c1 alone receives the first batch (the supervisor starts c2
/// once c1 has entries), so c1's steps on its first entry are those of that history; each class holds c1
/// before one of them (at most `perClass` of them, from the middle; all when 0; when c1's first
/// acknowledgement covers several entries, a batch's offset commit, only the first occurrence of each verb,
/// its first event's):
///
///  race:claim      the default schedule, two consumers; c1 held until c2 is idle (or waits on a lock c1
///                  holds): c2 claims c1's entries once CLAIM_IDLE_MS old and works on them first;
///  race:dup        one event and its retry, sent in flight once the first copy is delivered; two
///                  consumers, CLAIM_IDLE_MS 1 s (no claim while it lasts); c1 held until c2 has acknowledged its copy (or
///                  waits on a lock): both copies are worked on at once;
///  race:versions   versioned scenarios: two versions of one record, in both orders, one to each consumer
///                  as in race:dup;
///  race:claim+kill, race:dup+kill   the same with c2 killed before its first XACK (its work done, its
///                  acknowledgement not: the entry goes to a third process).
std::vector<RaceSchedule> raceSchedules(const Scenario& sc, const Schedule& base, const std::vector<Op>& history,
                                        int perClass);

/// Whether a run of race class `cls` (schedule `s`, its history) raced: c1's hold (the schedule's first
/// fault) fired and, before it was released, c2 was delivered an entry — for "race:versions" any entry (the
/// other version), for the others an entry of an event c1 had been delivered before the hold (its retry,
/// or the very entry, claimed). A run that did not race tested nothing of its class: a consumer whose
/// prefetch let the broker hand the retry to c1 too, a broker that hands no entry of a live consumer to
/// another (RabbitMQ, Kafka), a hold whose step c1 never reached.
bool raced(const std::string& cls, const Schedule& s, const std::vector<Op>& history);
/// The verdict a judged schedule `j` of class `cls` brings to its cell: its own; n/a when it did not test
/// its class — a kill or fault class whose planned faults did not all fire, the run otherwise passing, or a
/// race class that raced nothing; a race class's unfired kill counts as coverage loss, as in check.
Verdict cellVerdict(const std::string& cls, const Schedule& s, const Judged& j);

/// Adds the classes of `mine` (one target's, in its order) that `order` lacks, each after the class that
/// precedes it in `mine`.
void mergeClassOrder(std::vector<Class>& order, const std::vector<Class>& mine);

struct Options {
  int runs = 3;          ///< schedules per generated class
  int perClass = 0;      ///< faults per kill or fault class and target; 0: all
  /// Fault kinds besides kill whose classes run (compare --faults; kill is always run).
  std::vector<std::string> faults{"drop", "delay", "error", "forget", "restart"};
  int delayMs = 100;     ///< the length of delay faults
  bool races = true;     ///< run the race classes (raceSchedules)
  int racePerClass = -1; ///< hold points per race class; -1: perClass
  int events = 6;        ///< events of a generated schedule
  uint64_t seed = 0;
  /// Class ids that do not run, nor show as rows (the demo without --full leaves out a class whose family
  /// another class shows: a second moment of a fault kind, a late retry, a race with a kill added).
  std::set<std::string> leaveOut;
  /// A process's kill points before its first delivery make one class (classifyKillPoints' startOnce): the
  /// demo without --full.
  bool startOnce = false;
  std::string runPrefix; ///< prefix of run ids ("wallet/" in the demo)
  std::string scenario;  ///< RunRecord::scenario (demo)
  /// The sink policies each target runs under, a column per target and policy ("honour", "ignore": the
  /// provider honours idempotency keys or ignores them); empty: one column per target, under the
  /// session's policy. sinkPoliciesToCompare gives the commands' default.
  std::vector<std::string> sinkPolicies;
  /// compare --shard: run only the cells k (columns outer, classes inner, as Comparison::compare's
  /// "cells") with k % N == I; the fault-free baselines run in every shard, since the classes come from
  /// their traces. The other cells are n/a in this shard's matrix; `idemproof merge` puts them together.
  std::optional<Shard> shard;
};

/// What a comparison found: the matrix, the runs it shows, its verdict.
struct Comparison {
  CompareSection compare;      ///< report.json's "compare"
  std::vector<RunRecord> runs; ///< one example per cell that did not pass (a history for the first of each kind)
  Verdict verdict = Verdict::Unknown; ///< fail > unknown > pass over every cell
  bool unknownCells = false;   ///< some cell holds a schedule that could not be judged (even beside a failure)
  size_t schedules = 0;
  size_t again = 0;            ///< runs again of schedules whose point their earlier runs did not reach
  /// Interrupted by a signal: its name ("SIGINT"), and the schedules that did not run (or were cut short by
  /// the clean-up): each is counted unknown in its cell, and the comparison is at best unknown.
  std::string interrupted;
  size_t notRun = 0;
};

/// A column of the matrix: a target, under one sink policy when the comparison has that axis.
struct Column {
  size_t target = 0;      ///< index into the session's targets
  std::string name;       ///< the target's name
  std::string sinkPolicy; ///< "" without the axis (Options::sinkPolicies)
};

/// The columns of targets `names` under `sinkPolicies`: targets outer, policies inner (one column per
/// target when there is no policy).
std::vector<Column> columnsOf(const std::vector<std::string>& names, const std::vector<std::string>& sinkPolicies);

/// The sink policies compare and demo run each target under: none (the session's policy) for a scenario
/// without a sink or when --sink-policy names one; both, honour and ignore, for a scenario with a sink
/// otherwise (docs/sink.md, "compare: both policies").
std::vector<std::string> sinkPoliciesToCompare(const Scenario& sc, const CommonArgs& args);

/// One judged schedule of a comparison, as the matrix sees it.
struct JudgedCell {
  size_t target = 0;      ///< index into the columns
  std::string cls;        ///< Class::id
  std::string id;         ///< the run's id
  Verdict verdict = Verdict::Unknown; ///< pass | fail | unknown | error
  std::set<std::string> kinds;
  std::string point;      ///< its fault, for kill and fault classes (its holds and kill, for race classes)
  int planned = 0, fired = 0; ///< its faults, and those that fired
  std::string pattern = {};   ///< the short name of its first violation's anti-pattern, "" when none
  bool notRun = false;        ///< an interrupt came before it ran or while it ran: unknown, and no example
};

/// The matrix: one cell per class x column (n/a where the target has no schedule of the class), each
/// fail > unknown > pass over its schedules with the counts of both; a target's verdict; and whether any
/// cell holds an unknown schedule — also beside a failure, so that no unknown is hidden.
struct Matrix {
  std::vector<CompareCell> cells;     ///< in the order of columns, then classes
  std::vector<CompareTarget> targets; ///< one per column, their manifests left empty here
  std::vector<std::optional<size_t>> examples; ///< per cell: the judged schedule shown for it
  Verdict verdict = Verdict::Unknown; ///< fail > unknown > pass over the targets
  bool unknownCells = false;
};
Matrix matrixOf(const std::vector<Class>& classes, const std::vector<Column>& columns,
                const std::vector<JudgedCell>& judged);

/// The fault kinds compare and demo run besides kill when --faults is not given: drop, delay, error,
/// forget, and restart unless the servers are external (a restart needs servers idemproof owns).
std::vector<std::string> defaultFaultKinds(const CommonArgs& args);

/// Runs every class against every target of `session` and judges each schedule.
Comparison compareTargets(Session& session, const Options& o, Progress& progress);

/// The matrix as a terminal table: classes x columns (a second header line names each column's sink policy
/// when the comparison has that axis), then the costs.
std::string terminalTable(const CompareSection& compare);

} // namespace idem::compare
