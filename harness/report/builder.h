#pragma once
/// report/ owns report.json: ReportBuilder assembles the document every judging command writes, from the
/// header (what ran where), the judged runs and the verdict; each command adds only its own section
/// (sweep grid, check search, compare matrix, replay, demo). The schema is reports/report.schema.json,
/// documented in docs/report.md.
#include "core/verdict.h"
#include "plan/schedule.h"
#include "report/report.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace idem {

/// What ran where: the fields every report opens with.
struct ReportHeader {
  std::string command;              ///< run | sweep | check | replay | compare | demo
  std::string scenario;             ///< "" for the demo (several)
  std::string scenarioFile;
  std::vector<std::string> scenarios; ///< the demo's
  std::vector<std::string> targets;
  uint64_t seed = 0;
  bool embedded = true;
  std::string valkeyBinary;
  nlohmann::json options = nlohmann::json::object(); ///< the timing flags and workers
};

class ReportBuilder {
public:
  explicit ReportBuilder(ReportHeader header);

  void verdict(Verdict v) { verdict_ = v; }
  Verdict verdict() const { return verdict_; }
  /// Why the result could not be judged (verdict error), shown first.
  void error(std::string message) { error_ = std::move(message); }
  /// The signal that interrupted the command ("SIGINT"): the report holds only what finished before it.
  void interrupted(std::string signal) { interrupted_ = std::move(signal); }
  /// The schedule the command is about (run, sweep, replay; check's counterexample).
  void schedule(const Schedule& s) { schedule_ = s; }
  /// A judged run the report keeps (with its history when r.withHistory).
  void addRun(RunRecord r) { runs_.push_back(std::move(r)); }
  const std::vector<RunRecord>& runs() const { return runs_; }
  /// The top-level processes are those of this run (by id; default: the first run kept).
  void processesOf(std::string runId) { processesRun_ = std::move(runId); }
  /// The command's own section ("sweep", "check", "compare", "replay", "demo").
  void section(const std::string& name, nlohmann::json value) { sections_[name] = std::move(value); }
  /// A long array of a section that report.json gets item by item (report.h, StreamedArray); the
  /// section's own value of that member is what report.html and the JUnit file see.
  void streamed(StreamedArray a) { streamed_.push_back(std::move(a)); }
  /// Wall time and counts: total_ms, schedules, and any other integer the command measures.
  void timings(nlohmann::json t) { timings_ = std::move(t); }

  nlohmann::json build() const;
  /// Writes report.json (and report.html beside it) into `dir`; the JUnit XML to `junit` unless empty.
  /// Returns the path of report.json.
  std::string write(const std::string& dir, const std::string& junit) const;

private:
  ReportHeader header_;
  Verdict verdict_ = Verdict::Unknown;
  std::string error_;
  std::string interrupted_;
  std::optional<Schedule> schedule_;
  std::vector<RunRecord> runs_;
  std::optional<std::string> processesRun_;
  std::map<std::string, nlohmann::json> sections_;
  nlohmann::json timings_ = nlohmann::json::object();
  std::vector<StreamedArray> streamed_;
};

/// The version of report.json's format (reports/report.schema.json).
inline constexpr int kReportSchemaVersion = 2;

} // namespace idem
