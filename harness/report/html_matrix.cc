/// The matrix of a comparison: one row per class of schedules, one column per target, each cell coloured
/// by its verdict with the violation kinds and how many of its schedules failed; a failing cell links
/// to its counterexample. Below it, each target's cost in a fault-free run.
#include "report/html_util.h"

#include <fmt/format.h>

namespace idem::html {

namespace {

const json* cellOf(const json& compare, const std::string& cls, const std::string& target) {
  for (const auto& c : arr(compare, "cells"))
    if (str(c, "class") == cls && str(c, "target") == target) return &c;
  return nullptr;
}

std::string cellHtml(const json* c, const Anchors& anchors) {
  if (!c || str(*c, "verdict") == "n/a") return "<td class=\"cell na\" title=\"no such kill point in this target's trace\">—</td>";
  std::string verdict = str(*c, "verdict"), kinds;
  for (const auto& k : arr(*c, "kinds")) kinds += (kinds.empty() ? "" : ", ") + show(k);
  int64_t n = num(*c, "schedules"), failed = num(*c, "failed"), unknown = num(*c, "unknown");
  std::string count = verdict == "pass" ? fmt::format("{}/{}", n, n)
                      : verdict == "fail" ? fmt::format("{}/{} failed", failed, n)
                                          : fmt::format("{}/{} unknown", unknown, n);
  std::string word = verdict + (kinds.empty() ? "" : ": " + kinds);
  return fmt::format("<td class=\"cell {}\">{}<span class=\"count\">{}</span></td>", verdictClass(verdict),
                     linkTo(anchors, str(*c, "example"), word), esc(count));
}

std::string costs(const json& compare) {
  const json& list = arr(compare, "costs");
  if (list.empty()) return "";
  std::string out = "<table class=\"costs\"><tr><th>target</th><th>messages / s</th><th>round trips / message</th>"
                    "<th>stream entries</th><th>steps</th><th>first spawn → last ack</th></tr>";
  for (const auto& c : list) {
    auto d = [&](const char* key) { return c.contains(key) && c[key].is_number() ? c[key].get<double>() : 0.0; };
    out += fmt::format("<tr><td><b>{}</b></td><td class=\"n\">{:.1f}</td><td class=\"n\">{:.1f}</td><td class=\"n\">{}</td>"
                       "<td class=\"n\">{}</td><td class=\"n\">{:.1f} ms</td></tr>",
                       esc(str(c, "target")), d("msgs_per_s"), d("round_trips_per_msg"), num(c, "entries"), num(c, "steps"),
                       d("wall_us") / 1000.0);
  }
  return out + "</table><p class=\"note\">Measured in the fault-free run of the default schedule: stream entries divided by "
               "the time from the first consumer's start to the last acknowledgement (start-up included), and steps "
               "(requests to PostgreSQL and Valkey) divided by stream entries.</p>";
}

} // namespace

std::string compareMatrix(const json& compare, const Anchors& anchors) {
  std::vector<std::string> targets;
  for (const auto& t : arr(compare, "targets")) targets.push_back(t.is_string() ? t.get<std::string>() : str(t, "name"));
  std::string out = "<table class=\"matrix\"><tr><th>class of schedules</th>";
  for (const auto& t : targets) out += "<th>" + esc(t) + "</th>";
  out += "</tr>";
  bool killHeader = false;
  for (const auto& cls : arr(compare, "classes")) {
    if (str(cls, "kind") == "kill" && !killHeader) {
      killHeader = true;
      out += fmt::format("<tr class=\"group\"><td colspan=\"{}\">SIGKILL of the consumer, between two of its steps "
                         "(each target's own trace of the default schedule)</td></tr>",
                         targets.size() + 1);
    }
    out += fmt::format("<tr><td class=\"cls\">{}<div class=\"desc\">{}</div></td>", esc(str(cls, "label")),
                       esc(str(cls, "description")));
    for (const auto& t : targets) out += cellHtml(cellOf(compare, str(cls, "id"), t), anchors);
    out += "</tr>";
  }
  out += "</table>";
  return out + costs(compare);
}

} // namespace idem::html
