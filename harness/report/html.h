#pragma once
/// report.html: one self-contained page rendered from a report.json document — inline CSS and SVG, no
/// script, no request to anything. The verdict comes first, then what the command found (the checks of
/// a run, the grid of a sweep, the matrix of a comparison, a section per scenario of the demo), then one
/// section per counterexample (every run of the report with a history) with its diagnosis and timeline.
/// Every string taken from the report is HTML-escaped.
#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace idem {

/// The page. `logTails` maps a process log path as the report names it ("logs/run/c1.log") to the last
/// lines of that log, shown under the process (absent logs are only linked).
std::string renderHtml(const nlohmann::json& report, const std::map<std::string, std::string>& logTails = {});

/// How many runs of a check's search (check.run_summaries) the page lists: those that did not pass or
/// lost a fault, the first kPageRuns of them; it counts the others.
inline constexpr size_t kPageRuns = 100;

/// The last `lines` lines (at most `maxBytes`) of the file at `path`, or "" when it cannot be read.
std::string pageLogLines(const std::string& path, size_t lines = 14, size_t maxBytes = 4096);

} // namespace idem
