#pragma once
/// `idemproof explain REPORT_DIR`: for each failing run of a report (a run, a sweep's failing kill points,
/// a check's counterexample, a comparison's examples), its violations with the anti-pattern behind each,
/// the steps that show it (from the run's history) and the fix, as plain text for a terminal.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace idem {

/// The text for `report` (a report.json document). A report with no failing run says so in one line.
std::string explainReport(const nlohmann::json& report);

/// The report.json of `path` (a report folder, or the file itself). Throws UsageError naming the path and
/// the problem (no such file, not JSON, not a report: no "runs").
nlohmann::json readReportForExplain(const std::filesystem::path& path);

} // namespace idem
