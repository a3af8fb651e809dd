#pragma once
/// JUnit XML of a report, for CI systems that show test results: one testcase per kill point of a sweep
/// (and its baseline), per checker of a run/check/replay (across all its runs), per target × class of a
/// compare, per scenario × target × class of the demo. A violation is a <failure> whose message is the
/// diagnosis; a result that cannot be decided (unknown, error, a kill point that never fired) is an
/// <error>, so that CI never counts it as a pass. Classes that do not apply to a target are left out.
#include <nlohmann/json.hpp>

#include <string>

namespace idem {

/// The XML document (UTF-8, escaped).
std::string junitXml(const nlohmann::json& report);

/// Writes junitXml(report) to `file` (its folder created). Throws UsageError ("--junit: cannot write FILE:
/// reason") when it cannot, a failed flush included (a full disk, /dev/full).
void writeJunit(const std::string& file, const nlohmann::json& report);

} // namespace idem
