#include "report/builder.h"

#include "report/junit.h"

namespace idem {

ReportBuilder::ReportBuilder(ReportHeader header) : header_(std::move(header)) {}

nlohmann::json ReportBuilder::build() const {
  nlohmann::json j;
  j["schema_version"] = kReportSchemaVersion;
  j["tool"] = "idemproof";
  j["command"] = header_.command;
  j["verdict"] = toString(verdict_);
  if (!error_.empty()) j["error"] = error_;
  if (!interrupted_.empty()) j["interrupted"] = interrupted_;
  if (!header_.scenario.empty()) {
    j["scenario"] = header_.scenario;
    j["scenario_file"] = header_.scenarioFile;
  }
  if (!header_.scenarios.empty()) j["scenarios"] = header_.scenarios;
  j["targets"] = header_.targets;
  if (header_.scenarios.empty() && !header_.targets.empty()) j["target"] = header_.targets.front();
  j["seed"] = header_.seed;
  j["servers"] = {{"embedded", header_.embedded}, {"valkey_binary", header_.valkeyBinary}};
  j["options"] = header_.options;
  if (schedule_) j["schedule"] = *schedule_;
  j["violations"] = violationsOf(runs_);
  const RunRecord* top = runs_.empty() ? nullptr : &runs_.front();
  if (processesRun_)
    for (const auto& r : runs_)
      if (r.id == *processesRun_) top = &r;
  if (top) j["processes"] = idem::processesOf(top->history, top->logs);
  auto runs = nlohmann::json::array();
  for (const auto& r : runs_) runs.push_back(runJson(r));
  j["runs"] = runs;
  for (const auto& [name, value] : sections_) j[name] = value;
  j["timings"] = timings_;
  return j;
}

std::string ReportBuilder::write(const std::string& dir, const std::string& junit) const {
  nlohmann::json report = build();
  std::string path = writeReport(dir, report, streamed_);
  if (!junit.empty()) writeJunit(junit, report);
  return path;
}

} // namespace idem
