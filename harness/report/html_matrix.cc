/// The matrix of a comparison: one row per class of schedules, one column per target, each cell coloured
/// by its verdict with the violation kinds and how many of its schedules failed; a failing cell links
/// to its counterexample. Below it, each target's cost in a fault-free run.
#include "report/html_util.h"

#include "report/compare_section.h"

#include <fmt/format.h>

namespace idem::html {

namespace {

std::string cellHtml(const CompareCell* c, const Anchors& anchors) {
  if (!c || c->verdict == Verdict::NotApplicable)
    return "<td class=\"cell na\" title=\"no such kill point in this target's trace\">—</td>";
  std::string verdict = toString(c->verdict), kinds;
  for (const auto& k : c->kinds) kinds += (kinds.empty() ? "" : ", ") + k;
  const int n = c->schedules;
  std::string count = c->verdict == Verdict::Pass ? fmt::format("{}/{}", n, n)
                      : c->verdict == Verdict::Fail ? fmt::format("{}/{} failed", c->failed, n)
                                                    : fmt::format("{}/{} unknown", c->unknown, n);
  std::string word = verdict + (kinds.empty() ? "" : ": " + kinds);
  // A failing cell names the anti-pattern its example shows.
  std::string pattern = c->pattern ? fmt::format("<span class=\"pattern\">{}</span>", esc(*c->pattern)) : "";
  return fmt::format("<td class=\"cell {}\">{}{}<span class=\"count\">{}</span></td>", verdictClass(verdict),
                     linkTo(anchors, c->example, word), pattern, esc(count));
}

std::string costs(const CompareSection& compare) {
  if (compare.costs.empty()) return "";
  std::string out = "<table class=\"costs\"><tr><th>target</th><th>messages / s</th><th>round trips / message</th>"
                    "<th>stream entries</th><th>steps</th><th>first spawn → last ack</th></tr>";
  for (const auto& c : compare.costs) {
    out += fmt::format("<tr><td><b>{}</b></td><td class=\"n\">{:.1f}</td><td class=\"n\">{:.1f}</td><td class=\"n\">{}</td>"
                       "<td class=\"n\">{}</td><td class=\"n\">{:.1f} ms</td></tr>",
                       esc(c.target), c.msgsPerS, c.roundTripsPerMsg, c.entries, c.steps,
                       static_cast<double>(c.wallUs) / 1000.0);
  }
  return out + "</table><p class=\"note\">Measured in the fault-free run of the default schedule: stream entries divided by "
               "the time from the first consumer's start to the last acknowledgement (start-up included), and steps "
               "(requests to PostgreSQL and Valkey) divided by stream entries.</p>";
}

} // namespace

std::string compareMatrix(const CompareSection& compare, const Anchors& anchors) {
  std::string out = "<table class=\"matrix\"><tr><th>class of schedules</th>";
  for (const auto& t : compare.targets) out += "<th>" + esc(t.name) + "</th>";
  out += "</tr>";
  bool killHeader = false;
  for (const auto& cls : compare.classes) {
    if (cls.kind == "kill" && !killHeader) {
      killHeader = true;
      out += fmt::format("<tr class=\"group\"><td colspan=\"{}\">SIGKILL of the consumer, between two of its steps "
                         "(each target's own trace of the default schedule)</td></tr>",
                         compare.targets.size() + 1);
    }
    out += fmt::format("<tr><td class=\"cls\">{}<div class=\"desc\">{}</div></td>", esc(cls.label), esc(cls.description));
    for (const auto& t : compare.targets) out += cellHtml(compare.cell(cls.id, t.name), anchors);
    out += "</tr>";
  }
  out += "</table>";
  return out + costs(compare);
}

} // namespace idem::html
