#pragma once
/// report.json: one document per invocation of a judging command, a pure function of the judged runs.
/// The schema is versioned (schema_version) and documented in docs/report.md and
/// reports/report.schema.json.
#include "checkers/check.h"
#include "core/history.h"
#include "plan/schedule.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace idem {

/// One judged run as the report shows it.
struct RunRecord {
  std::string id;      ///< "run", "baseline", "after:COMMIT#3", "check-17", ...
  std::string target;
  std::string verdict; ///< pass | fail | unknown | error
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

/// Writes `report` as report.json into `dir` (created), plus whatever report files exist for it
/// (report.html). Returns the path of report.json.
std::string writeReport(const std::string& dir, const nlohmann::json& report);

} // namespace idem
