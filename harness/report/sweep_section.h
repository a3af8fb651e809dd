#pragma once
/// report.json's "sweep" section as a typed value (docs/report.md, "sweep"): sweep and sweep --interleave
/// build it, the merge of sweep shards reads its points back and writes the merged one through the same
/// type, and the page and JUnit read its interleave grid through it.
#include "core/verdict.h"
#include "history/trace.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace idem {

/// One fault run at one point of the fault-free trace.
struct SweepPoint {
  std::string point;  ///< the fault's text form ("after:COMMIT#3"), also its run's id
  std::string kind;   ///< the fault kind
  std::string server; ///< "pg", "valkey", "http"
  std::string detail; ///< the step's request, as recorded
  std::string cls;    ///< its point class (history/point_class.h), "class"
  Verdict verdict = Verdict::Unknown;
  bool fired = false;
  int runs = 1; ///< how many times it ran: a point its run did not reach is run again (driver/pool.h)
  std::set<std::string> kinds; ///< violation kinds
  std::optional<size_t> index; ///< its place in the unsharded sweep's order: in a shard's report only
  /// A point that failed or is unknown: the command that runs its schedule again (`idemproof replay
  /// <report>/schedules/<point>.json --target DIR`, driver/commands.h replayCommandOf).
  std::optional<std::string> replay = {};
};

/// One run of sweep --interleave: c1 held at its row's point until c2 passed `until`.
struct InterleaveCell {
  std::string until;  ///< c2's point ("c2:after:COMMIT#1"), or "idle": released when c2 is idle
  std::string point;  ///< the hold's text form, also its run's id
  Verdict verdict = Verdict::Unknown;
  bool fired = false; ///< the hold fired
  int runs = 1;       ///< how many times it ran: a hold that did not fire is run again (driver/pool.h)
  std::set<std::string> kinds; ///< violation kinds

  bool operator==(const InterleaveCell&) const = default;
};

/// One hold point of c1 and the runs that release it.
struct InterleaveRow {
  std::string hold;   ///< "c1:before:COMMIT#1"
  std::string server, detail;
  std::string role;   ///< "first delivery of event 1", "retry of event 2"
  std::vector<InterleaveCell> cells; ///< one per step of c2 that releases it, then "idle"
  std::optional<size_t> index; ///< its place in the unsharded grid's order: in a shard's report only

  bool operator==(const InterleaveRow&) const = default;
};

/// The grid of sweep --interleave (docs/report.md, "interleave").
struct InterleaveGrid {
  std::vector<InterleaveRow> rows;
  int consumers = 2;
  int failed = 0, unknown = 0, notFired = 0;
  std::string reduction; ///< which points were left out as equivalent

  bool operator==(const InterleaveGrid&) const = default;
};

struct SweepSection {
  std::vector<SweepPoint> points;
  std::vector<std::string> faultKinds;
  std::vector<SkippedStep> skipped; ///< the trace's steps with no point (history/trace.h)
  int failed = 0, unknown = 0, notFired = 0;
  size_t tracePoints = 0, selectedPoints = 0, classes = 0, notRun = 0;
  bool reduced = false;
  std::optional<int> reduceAbove; ///< null with --exhaustive
  std::optional<int> events;      ///< --events, null when not given
  std::optional<std::string> noFaults; ///< why no fault ran, null when some did
  /// FNV-1a 64 of the faults planned from the trace (every shard's, in the sweep's order): shards that
  /// placed their faults on different traces differ in it, and merge refuses them. "" when none was planned.
  std::string faultsDigest;
  std::optional<std::string> traceFrom; ///< --trace-from: the report whose fault-free run gave the trace
  /// sweep --interleave only: then points is empty, faultKinds is {"hold"}, and the section has only
  /// points, fault_kinds, skipped, failed, unknown, not_fired, faults_digest (of the grid's hold points)
  /// and interleave (the others read as their defaults).
  std::optional<InterleaveGrid> interleave;
};

void to_json(nlohmann::json& j, const SweepPoint& p);
/// Throws nlohmann::json::exception on a missing or mistyped member, std::invalid_argument on a verdict
/// that is none.
void from_json(const nlohmann::json& j, SweepPoint& p);
void to_json(nlohmann::json& j, const SkippedStep& s);
void from_json(const nlohmann::json& j, SkippedStep& s);
void to_json(nlohmann::json& j, const InterleaveCell& c);
/// Throws nlohmann::json::exception on a missing point, verdict or fired, or a mistyped member;
/// std::invalid_argument on a verdict that is none.
void from_json(const nlohmann::json& j, InterleaveCell& c);
void to_json(nlohmann::json& j, const InterleaveRow& r);
/// Throws as from_json of an InterleaveCell does; hold and cells are required.
void from_json(const nlohmann::json& j, InterleaveRow& r);
void to_json(nlohmann::json& j, const InterleaveGrid& g);
/// Throws as from_json of an InterleaveRow does; rows are required.
void from_json(const nlohmann::json& j, InterleaveGrid& g);
void to_json(nlohmann::json& j, const SweepSection& s);
void from_json(const nlohmann::json& j, SweepSection& s);

} // namespace idem
