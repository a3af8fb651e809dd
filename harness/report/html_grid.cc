/// The grid of a sweep: one row per step of the fault-free trace, a "before" and an "after" cell for its
/// two kill points, each coloured by its verdict and naming the violation kinds; a failing cell links to
/// its counterexample.
#include "report/html_util.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace idem::html {

namespace {

std::string cell(const SweepPoint* p, const Anchors& anchors) {
  if (!p) return "<td class=\"cell na\">—</td>";
  std::string verdict = toString(p->verdict), kinds;
  for (const auto& k : p->kinds) kinds += (kinds.empty() ? "" : ", ") + k;
  std::string text = p->fired ? verdict + (kinds.empty() ? "" : ": " + kinds)
                              : p->runs > 1 ? fmt::format("not fired in {} runs", p->runs) : "not fired";
  std::string about = p->cls.empty() ? "" : "class " + p->cls;
  if (p->fired && p->runs > 1) // its earlier runs did not reach the step
    about += fmt::format("{}fired in run {} of the point", about.empty() ? "" : "; ", p->runs);
  std::string title = about.empty() ? "" : fmt::format(" title=\"{}\"", esc(about));
  return fmt::format("<td class=\"cell {}\"{}>{}</td>", verdictClass(verdict), title, linkTo(anchors, p->point, text));
}

} // namespace

std::string sweepGrid(const SweepSection& sweep, const Anchors& anchors) {
  struct Step {
    std::string name, server, detail;
    const SweepPoint *before = nullptr, *after = nullptr;
  };
  std::vector<Step> steps;
  for (const auto& p : sweep.points) {
    auto colon = p.point.find(':');
    std::string name = colon == std::string::npos ? p.point : p.point.substr(colon + 1);
    if (steps.empty() || steps.back().name != name) steps.push_back({name, p.server, p.detail});
    (p.point.rfind("before:", 0) == 0 ? steps.back().before : steps.back().after) = &p;
  }
  std::string out = fmt::format("<p>{} kill points: <b>{}</b> failed, <b>{}</b> unknown, <b>{}</b> never fired.</p>",
                                sweep.points.size(), sweep.failed, sweep.unknown, sweep.notFired);
  if (sweep.reduced)
    out += fmt::format("<p class=\"note\">Reduced: {} of the trace's {} kill points were run (it has more than {}), a few of "
                       "each of its {} classes (the first, middle and last, and those next to a producer retry); a step not "
                       "listed or a cell — was not run. <code>--exhaustive</code> runs every point.</p>",
                       sweep.selectedPoints, sweep.tracePoints, sweep.reduceAbove ? std::to_string(*sweep.reduceAbove) : "",
                       sweep.classes);
  out += "<table class=\"grid\"><tr><th>step</th><th>server</th><th>kill before</th><th>kill after</th><th>request</th></tr>";
  for (const auto& s : steps) {
    out += fmt::format("<tr><td class=\"step\">{}</td><td>{}</td>{}{}<td class=\"detail\">{}</td></tr>", esc(s.name),
                       esc(s.server == "pg" ? "PostgreSQL" : s.server == "valkey" ? "Valkey" : s.server), cell(s.before, anchors),
                       cell(s.after, anchors), esc(cut(s.detail, 90)));
  }
  out += "</table>";
  if (!sweep.skipped.empty()) {
    out += "<p class=\"note\">Not run, because they cannot differ from a point that is: ";
    std::string list;
    for (const auto& s : sweep.skipped) list += (list.empty() ? "" : "; ") + s.step + " (" + s.reason + ")";
    out += esc(list) + ".</p>";
  }
  return out;
}

std::string interleaveGrid(const InterleaveGrid& grid, const Anchors& anchors) {
  size_t columns = 0;
  for (const auto& r : grid.rows) columns = std::max(columns, r.cells.size());
  std::string out = fmt::format(
      "<p>{} hold points of c1 × the steps c2 made while c1 was held: <b>{}</b> failed, <b>{}</b> unknown, <b>{}</b> "
      "never fired. Each cell holds c1 at its row's point until c2 passes the cell's step; the last, until c2 is "
      "idle or waits on a lock c1 holds.</p>",
      grid.rows.size(), grid.failed, grid.unknown, grid.notFired);
  out += "<table class=\"grid\"><tr><th>hold c1</th><th>work</th>";
  for (size_t c = 0; c + 1 < columns; ++c) out += fmt::format("<th>c2 step {}</th>", c + 1);
  out += "<th>c2 idle</th><th>request</th></tr>";
  for (const auto& r : grid.rows) {
    out += fmt::format("<tr><td class=\"step\">{}</td><td>{}</td>", esc(r.hold), esc(r.role));
    const auto& cells = r.cells;
    for (size_t c = 0; c < columns; ++c) {
      // The row's own run (until c2 is idle) goes in the last column; a row with fewer steps leaves gaps.
      const InterleaveCell* cell = nullptr;
      if (c + 1 == columns && !cells.empty()) cell = &cells.back();
      else if (c + 1 < cells.size()) cell = &cells[c];
      if (!cell) {
        out += "<td class=\"cell na\">—</td>";
        continue;
      }
      std::string verdict = toString(cell->verdict), kinds;
      for (const auto& k : cell->kinds) kinds += (kinds.empty() ? "" : ", ") + k;
      std::string text = cell->until + ": " + verdict + (kinds.empty() ? "" : " (" + kinds + ")");
      if (!cell->fired) text = cell->until + ": not fired";
      out += fmt::format("<td class=\"cell {}\">{}</td>", verdictClass(verdict), linkTo(anchors, cell->point, text));
    }
    out += fmt::format("<td class=\"detail\">{}</td></tr>", esc(cut(r.detail, 70)));
  }
  out += "</table>";
  if (!grid.reduction.empty()) out += "<p class=\"note\">Reduction: " + esc(grid.reduction) + ".</p>";
  return out;
}

} // namespace idem::html
