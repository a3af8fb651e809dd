#pragma once
/// report.json's "sweep" section as a typed value (docs/report.md, "sweep"): sweep builds it, the merge of
/// sweep shards reads its points back and writes the merged one through the same type.
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
  std::set<std::string> kinds; ///< violation kinds
  std::optional<size_t> index; ///< its place in the unsharded sweep's order: in a shard's report only
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
};

void to_json(nlohmann::json& j, const SweepPoint& p);
/// Throws nlohmann::json::exception on a missing or mistyped member, std::invalid_argument on a verdict
/// that is none.
void from_json(const nlohmann::json& j, SweepPoint& p);
void to_json(nlohmann::json& j, const SkippedStep& s);
void from_json(const nlohmann::json& j, SkippedStep& s);
void to_json(nlohmann::json& j, const SweepSection& s);
void from_json(const nlohmann::json& j, SweepSection& s);

} // namespace idem
