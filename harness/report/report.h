#pragma once
/// report.json: one document per invocation of a judging command, a pure function of the judged runs.
/// The schema is versioned (schema_version) and documented in docs/report.md and
/// reports/report.schema.json.
#include "checkers/checkers.h"
#include "core/verdict.h"
#include "history/history.h"
#include "plan/schedule.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace idem {

/// One judged run as the report shows it.
struct RunRecord {
  std::string id;      ///< "run", "baseline", "after:COMMIT#3", "check-17", ... (unique in a report)
  std::string target;
  std::string scenario; ///< set when a report holds runs of several scenarios (demo); "" otherwise
  std::string title;    ///< what the run is, for people ("after COMMIT, before XACK: after:COMMIT#2"); "" = id
  Verdict verdict = Verdict::Unknown; ///< pass | fail | unknown | error
  std::string error;
  Schedule schedule;
  std::vector<Op> history;
  std::vector<CheckResult> results;
  std::map<std::string, std::string> logs; ///< process label -> log path relative to the report
  bool withHistory = true;                 ///< include the whole history in the report
};

/// The processes of a history: [{"name","consumer","pid","restart","exit","log"}].
nlohmann::json processesOf(const std::vector<Op>& history, const std::map<std::string, std::string>& logs);

/// A run as JSON: id, target, verdict, schedule, checks, violations, processes, history.
nlohmann::json runJson(const RunRecord& r);

/// Every violation of the runs, each tagged with its run id (and target).
nlohmann::json violationsOf(const std::vector<RunRecord>& runs);

/// A long array of a report's section that report.json gets one item at a time, never held whole as JSON
/// (check.run_summaries: one item per run of the search, ~1 KB each as JSON).
struct StreamedArray {
  std::string section, member; ///< report[section][member]
  size_t count = 0;
  std::function<nlohmann::json(size_t i)> item;
};

/// Writes `report` as report.json into `dir` (created) and report.html beside it (rendered from the same
/// JSON, with the last lines of the logs of the runs that have a history). Returns the path of
/// report.json; throws UsageError ("--report: cannot write ...") when report.json cannot be written whole.
/// A page that cannot be rendered is reported on stderr; report.json is written anyway.
/// Each of `streamed` replaces its member in report.json (the page is rendered from `report` as given).
std::string writeReport(const std::string& dir, const nlohmann::json& report,
                        const std::vector<StreamedArray>& streamed = {});

/// What a fault-free run cost: its messages (stream entries; an HTTP scenario's requests), the round trips
/// to the servers, and the wall time from the first process's start to the last acknowledgement (HTTP:
/// the last answer).
struct RunCost {
  int64_t entries = 0, steps = 0, wall_us = 0;
  double msgsPerSecond() const { return wall_us > 0 ? entries * 1e6 / static_cast<double>(wall_us) : 0.0; }
  double roundTripsPerMessage() const { return entries > 0 ? static_cast<double>(steps) / static_cast<double>(entries) : 0.0; }
};
RunCost costOf(const std::vector<Op>& history);

} // namespace idem
