#pragma once
/// report.json's "compare" section as a typed value (docs/report.md, "compare"): compare and demo build it
/// (driver/compare.cc), the merge of compare shards reads each shard's back and writes the merged one
/// through the same type, and the page, JUnit and the terminal table read it. Members a report may lack
/// read as their defaults (a report idemproof writes has them all); a member of the wrong type, or a
/// verdict that is none, does not read.
#include "core/verdict.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace idem {

/// One class of schedules: a row of the matrix.
struct CompareClass {
  std::string id;    ///< "default", "retry", "late-retry", "reorder", "kill:COMMIT>XACK", "drop:after"
  std::string kind;  ///< schedule | retry | reorder | kill | fault | race
  std::string label; ///< "after COMMIT, before XACK"
  std::string description;

  bool operator==(const CompareClass&) const = default;
};

/// One class against one column (a target, under one of the comparison's sink policies when it has that
/// axis): fail > unknown > pass over its schedules, n/a when it has none.
struct CompareCell {
  std::string cls; ///< CompareClass::id, "class"
  std::string target;
  /// The sink's policy for keys its schedules ran under, when the comparison has that axis
  /// (CompareSection::sinkPolicies); "" otherwise.
  std::string sinkPolicy = {};
  Verdict verdict = Verdict::NotApplicable;
  std::set<std::string> kinds; ///< violation kinds of its failing schedules
  int schedules = 0, failed = 0, unknown = 0;
  std::string example; ///< the id of the run shown for it, "" when none
  /// Kill, fault and race classes only: each schedule's faults ("after:COMMIT#2", holds joined by " + ").
  std::optional<std::vector<std::string>> points;
  /// Kill, fault and race classes only: the faults planned, and those that fired (absent in reports
  /// written before they were counted).
  std::optional<int> faultsPlanned, faultsFired;
  /// Failing cells: the short name of the anti-pattern its example shows (the first of its violations
  /// that has one, checkers.h Pattern::name); absent when none is named.
  std::optional<std::string> pattern = {};
  /// The command that runs its example again (`idemproof replay FILE --target DIR`, with `--sink-policy`
  /// when the comparison has that axis); absent when it has no example.
  std::optional<std::string> replay = {};

  /// Kill, fault and race classes have points and fault counts; the others none.
  static bool hasPoints(const std::string& classKind) {
    return classKind == "kill" || classKind == "fault" || classKind == "race";
  }
  bool operator==(const CompareCell&) const = default;
};

/// One column: a target (under one sink policy, when the comparison has that axis), the fold of its cells.
struct CompareTarget {
  std::string name;
  std::string sinkPolicy = {}; ///< as CompareCell::sinkPolicy
  std::string manifest; ///< its target.json
  Verdict verdict = Verdict::Unknown;
  std::set<std::string> kinds;
  std::string example; ///< the run of its first failing cell, "" when none fails
  int unknownCells = 0; ///< cells holding a schedule that could not be judged, also beside a failure

  /// "sink-keyed", or "sink-keyed (ignore)" under a sink policy: the column's name for people.
  std::string column() const { return sinkPolicy.empty() ? name : name + " (" + sinkPolicy + ")"; }
  bool operator==(const CompareTarget&) const = default;
};

/// A target's cost in its fault-free run of the default schedule (report/report.h, RunCost).
struct CompareCost {
  std::string target;
  std::string sinkPolicy = {}; ///< as CompareCell::sinkPolicy
  int64_t entries = 0, steps = 0, wallUs = 0;
  double msgsPerS = 0, roundTripsPerMsg = 0;

  bool operator==(const CompareCost&) const = default;
};

struct CompareSection {
  std::vector<CompareClass> classes;
  std::vector<CompareTarget> targets;
  std::vector<CompareCell> cells; ///< in the order of targets, then classes
  std::vector<CompareCost> costs;
  int runsPerClass = 0; ///< --runs
  int perClass = 0;     ///< --per-class (0: every point)
  int events = 0;       ///< --events
  uint64_t seed = 0;
  /// The comparison's second axis: each target ran under each of these sink policies ("honour", "ignore"),
  /// a column per target and policy. Empty: one column per target, under the scenario's (or --sink-policy's).
  std::vector<std::string> sinkPolicies = {};

  /// The cell of class `cls` and target `target` (under `sinkPolicy`), null when there is none.
  const CompareCell* cell(const std::string& cls, const std::string& target, const std::string& sinkPolicy = "") const;
  /// The cell of class `cls` in column `t`.
  const CompareCell* cell(const std::string& cls, const CompareTarget& t) const { return cell(cls, t.name, t.sinkPolicy); }
  bool operator==(const CompareSection&) const = default;
};

void to_json(nlohmann::json& j, const CompareClass& c);
/// Throws nlohmann::json::exception on a missing id or label, or a mistyped member.
void from_json(const nlohmann::json& j, CompareClass& c);
void to_json(nlohmann::json& j, const CompareCell& c);
/// Throws nlohmann::json::exception on a missing class, target or verdict, or a mistyped member;
/// std::invalid_argument on a verdict that is none.
void from_json(const nlohmann::json& j, CompareCell& c);
void to_json(nlohmann::json& j, const CompareTarget& t);
/// Throws as from_json of a CompareCell does; name and verdict are required.
void from_json(const nlohmann::json& j, CompareTarget& t);
void to_json(nlohmann::json& j, const CompareCost& c);
/// Throws nlohmann::json::exception on a missing target, msgs_per_s or round_trips_per_msg, or a mistyped member.
void from_json(const nlohmann::json& j, CompareCost& c);
void to_json(nlohmann::json& j, const CompareSection& s);
/// Throws as its members' from_json do; classes, targets and cells are required.
void from_json(const nlohmann::json& j, CompareSection& s);

} // namespace idem
