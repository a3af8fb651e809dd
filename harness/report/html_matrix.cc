/// The matrix of a comparison: one row per class of schedules, one column per target (per target and sink
/// policy when the comparison has that axis: the policies a second header row under each target), each cell
/// coloured by its verdict with the violation kinds and how many of its schedules failed; a failing cell
/// links to its counterexample and carries the command that replays it. Below it, each column's cost in a
/// fault-free run.
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
  std::string title = c->replay ? fmt::format(" title=\"reproduce: {}\"", esc(*c->replay)) : "";
  return fmt::format("<td class=\"cell {}\"{}>{}{}<span class=\"count\">{}</span></td>", verdictClass(verdict), title,
                     linkTo(anchors, c->example, word), pattern, esc(count));
}

std::string costs(const CompareSection& compare) {
  if (compare.costs.empty()) return "";
  std::string out = "<table class=\"costs\"><tr><th>target</th><th>messages / s</th><th>round trips / message</th>"
                    "<th>stream entries</th><th>steps</th><th>first spawn → last ack</th></tr>";
  for (const auto& c : compare.costs) {
    const std::string policy = c.sinkPolicy.empty() ? "" : " <span class=\"policy\">sink policy " + esc(c.sinkPolicy) + "</span>";
    out += fmt::format("<tr><td><b>{}</b>{}</td><td class=\"n\">{:.1f}</td><td class=\"n\">{:.1f}</td><td class=\"n\">{}</td>"
                       "<td class=\"n\">{}</td><td class=\"n\">{:.1f} ms</td></tr>",
                       esc(c.target), policy, c.msgsPerS, c.roundTripsPerMsg, c.entries, c.steps,
                       static_cast<double>(c.wallUs) / 1000.0);
  }
  return out + "</table><p class=\"note\">Measured in the fault-free run of the default schedule: stream entries divided by "
               "the time from the first consumer's start to the last acknowledgement (start-up included), and steps "
               "(requests to PostgreSQL and Valkey) divided by stream entries.</p>";
}

} // namespace

std::string compareMatrix(const CompareSection& compare, const Anchors& anchors) {
  const bool policies = !compare.sinkPolicies.empty();
  std::string out = fmt::format("<table class=\"matrix\"><tr><th{}>class of schedules</th>", policies ? " rowspan=\"2\"" : "");
  if (!policies) {
    for (const auto& t : compare.targets) out += "<th>" + esc(t.name) + "</th>";
  } else { // a target's columns side by side under its name, a sink policy each
    for (size_t i = 0; i < compare.targets.size();) {
      size_t n = 1;
      while (i + n < compare.targets.size() && compare.targets[i + n].name == compare.targets[i].name) ++n;
      out += fmt::format("<th colspan=\"{}\">{}</th>", n, esc(compare.targets[i].name));
      i += n;
    }
    out += "</tr><tr>";
    for (const auto& t : compare.targets)
      out += fmt::format("<th class=\"policy\" title=\"the provider {} idempotency keys\">{}</th>",
                         t.sinkPolicy == "honour" ? "honours" : t.sinkPolicy == "ignore" ? "ignores" : "has policy " + esc(t.sinkPolicy) + " for",
                         esc(t.sinkPolicy));
  }
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
    for (const auto& t : compare.targets) out += cellHtml(compare.cell(cls.id, t), anchors);
    out += "</tr>";
  }
  out += "</table>";
  return out + costs(compare);
}

} // namespace idem::html
