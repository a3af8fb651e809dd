/// The runs of a check's search (check.run_summaries): counted by verdict, and listed only when they did
/// not pass or a fault of theirs never fired, at most kMaxRows of them: a page of 10,000 runs stays a
/// page, and report.json keeps every run's summary.
#include "report/html_util.h"

#include <fmt/format.h>

namespace idem::html {

namespace {

constexpr size_t kMaxRows = 100;

std::string words(const json& list) {
  std::string out;
  for (const auto& x : list) out += (out.empty() ? "" : ", ") + show(x);
  return out;
}

} // namespace

std::string searchRuns(const json& check, const Anchors& anchors) {
  const json& runs = arr(check, "run_summaries");
  if (runs.empty()) return "";
  std::map<std::string, size_t> byVerdict;
  size_t lost = 0, listed = 0, more = 0;
  std::string rows;
  for (const auto& r : runs) {
    const std::string verdict = str(r, "verdict");
    ++byVerdict[verdict];
    const bool loss = arr(r, "fired").size() < arr(r, "planned").size();
    lost += loss;
    if (verdict == "pass" && !loss) continue;
    if (listed == kMaxRows) {
      ++more;
      continue;
    }
    ++listed;
    const std::string n = std::to_string(num(r, "run"));
    // The failing run is the counterexample's found run; an unknown one may be kept as run-N.
    const bool found = verdict == "fail" && num(arr(check, "counterexample")["found"], "run") == num(r, "run");
    std::string why = verdict == "fail" ? words(arr(r, "kinds")) : str(r, "reason");
    if (loss && why.empty()) why = "a fault never fired";
    rows += fmt::format("<tr><td class=\"n\">{}</td><td class=\"cell {}\">{}</td><td class=\"mono\">{}</td>"
                        "<td class=\"mono\">{}</td><td>{}</td></tr>",
                        linkTo(anchors, found ? "counterexample" : "run-" + n, n), verdictClass(verdict), esc(verdict),
                        esc(words(arr(r, "planned"))), esc(words(arr(r, "fired"))), esc(cut(why, 200)));
  }
  std::string counts;
  for (const auto& [v, k] : byVerdict) counts += fmt::format("{}<b>{}</b> {}", counts.empty() ? "" : ", ", k, esc(v));
  std::string out = fmt::format("<section><h2>Runs</h2><p>{} run{} of the search: {}; <b>{}</b> with a fault that never "
                                "fired. {}</p>",
                                runs.size(), runs.size() == 1 ? "" : "s", counts, lost,
                                listed == 0 ? "Every run passed with every fault fired."
                                            : "The runs that did not pass or lost a fault:");
  if (listed > 0)
    out += "<table class=\"runs\"><tr><th>run</th><th>verdict</th><th>faults planned</th><th>fired</th>"
           "<th>kinds / why</th></tr>" + rows + "</table>";
  if (more > 0) out += fmt::format("<p class=\"note\">… and {} more: every run is in report.json (check.run_summaries).</p>", more);
  return out + "</section>";
}

} // namespace idem::html
