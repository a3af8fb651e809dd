#pragma once
/// Internal: what every part of report.html shares. Every string that comes from a report (and so from
/// a target or a history) reaches the page only through esc(), which escapes it for text and for quoted
/// attributes alike; the page has no script at all.
#include "report/compare_section.h"
#include "report/sweep_section.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace idem::html {

using json = nlohmann::json;

/// Valid UTF-8 (invalid bytes become U+FFFD), control characters other than tab and newline dropped.
std::string cleanUtf8(std::string_view s);
/// `s` escaped for HTML text and double- or single-quoted attributes (& < > " ').
std::string esc(std::string_view s);
/// At most `max` characters (code points) of `s`, with "…" when cut.
std::string cut(std::string_view s, size_t max);
/// A JSON value as a person reads it: strings as they are, null as "", anything else as compact JSON.
std::string show(const json& v);

/// j[key] when it is a string, else `def`.
std::string str(const json& j, const char* key, const std::string& def = "");
/// j[key] when it is a number, else `def`.
int64_t num(const json& j, const char* key, int64_t def = 0);
/// j[key] when it is an array/object, else an empty array.
const json& arr(const json& j, const char* key);

/// CSS class of a verdict word: pass, fail, unknown, error, na.
std::string verdictClass(const std::string& verdict);
/// An href for a log path written by idemproof (relative, plain characters), or "" when `path` is not
/// one: such a path is shown as text, never linked.
std::string safeHref(const std::string& path);

/// The page's style sheet (html_css.cc).
const char* css();

/// Run id -> the anchor of its section ("run-3"), for runs of the report that have a history.
using Anchors = std::map<std::string, std::string>;
Anchors anchorsOf(const json& report);
/// "<a href="#run-3">text</a>" when `id` has an anchor, else the escaped text.
std::string linkTo(const Anchors& anchors, const std::string& id, const std::string& text);

/// The timeline of one run (an inline SVG): one lane per actor, one row per op (html_timeline.cc).
std::string timeline(const json& run);
/// The section of a run with a history: diagnosis, timeline, processes and log tails (html_runs.cc).
std::string runSection(const json& run, const std::string& anchor, const std::map<std::string, std::string>& logTails);
/// The grid of kill points x verdict of a sweep report (html_grid.cc).
std::string sweepGrid(const SweepSection& sweep, const Anchors& anchors);
/// The grid of sweep --interleave: a row per hold point of c1, a cell per step of c2 that releases it.
std::string interleaveGrid(const InterleaveGrid& grid, const Anchors& anchors);
/// The matrix of classes x targets of a "compare" section, and the costs (html_matrix.cc).
std::string compareMatrix(const CompareSection& compare, const Anchors& anchors);
/// The runs of a check's search: counts by verdict and the runs that did not pass (html_check.cc).
std::string searchRuns(const json& check, const Anchors& anchors);
/// The checks of a run: checker, verdict, violations, reason (html_runs.cc).
std::string checksTable(const json& run);

} // namespace idem::html
