/// The runs of a check's search: counted by verdict (check.passed, .failed, ...), and listed only when
/// they did not pass or a fault of theirs never fired, the first kPageRuns of them (from
/// check.run_summaries): a page of 10,000 runs stays a page, and report.json keeps every run's summary.
/// check_report.cc gives the page only those runs (and one more, to say there are more).
#include "report/html.h"
#include "report/html_util.h"

#include <fmt/format.h>

namespace idem::html {

namespace {

std::string joinedWords(const json& list) {
  std::string out;
  for (const auto& x : list) out += (out.empty() ? "" : ", ") + show(x);
  return out;
}

} // namespace

std::string searchRuns(const json& check, const Anchors& anchors) {
  const json& runs = arr(check, "run_summaries");
  const int64_t total = num(check, "runs");
  if (total == 0) return "";
  std::string rows;
  size_t listed = 0;
  bool more = false;
  for (const auto& r : runs) {
    const std::string verdict = str(r, "verdict");
    const bool loss = arr(r, "fired").size() < arr(r, "planned").size();
    if (verdict == "pass" && !loss) continue;
    if (listed == kPageRuns) {
      more = true;
      break;
    }
    ++listed;
    const std::string n = std::to_string(num(r, "run"));
    // The failing run is the counterexample's found run; an unknown one may be kept as run-N.
    const bool found = verdict == "fail" && num(arr(arr(check, "counterexample"), "found"), "run") == num(r, "run");
    std::string why = verdict == "fail" ? joinedWords(arr(r, "kinds")) : str(r, "reason");
    if (loss && why.empty()) why = "a fault never fired";
    rows += fmt::format("<tr><td class=\"n\">{}</td><td class=\"cell {}\">{}</td><td class=\"mono\">{}</td>"
                        "<td class=\"mono\">{}</td><td>{}</td></tr>",
                        linkTo(anchors, found ? "counterexample" : "run-" + n, n), verdictClass(verdict), esc(verdict),
                        esc(joinedWords(arr(r, "planned"))), esc(joinedWords(arr(r, "fired"))), esc(cut(why, 200)));
  }
  std::string counts;
  for (const auto& [key, word] : {std::pair{"passed", "pass"}, {"failed", "fail"}, {"unknown", "unknown"}, {"errors", "error"}})
    if (num(check, key) > 0) counts += fmt::format("{}<b>{}</b> {}", counts.empty() ? "" : ", ", num(check, key), word);
  const int64_t lost = num(arr(check, "coverage_summary"), "runs_with_coverage_loss");
  std::string out = fmt::format("<section><h2>Runs</h2><p>{} run{} of the search: {}; <b>{}</b> with a fault that never "
                                "fired. {}</p>",
                                total, total == 1 ? "" : "s", counts, lost,
                                listed == 0 ? "Every run passed with every fault fired."
                                            : "The runs that did not pass or lost a fault:");
  if (listed > 0)
    out += "<table class=\"runs\"><tr><th>run</th><th>verdict</th><th>faults planned</th><th>fired</th>"
           "<th>kinds / why</th></tr>" + rows + "</table>";
  if (more)
    out += fmt::format("<p class=\"note\">Only the first {} are listed; report.json has every run "
                       "(check.run_summaries).</p>", kPageRuns);
  return out + "</section>";
}

} // namespace idem::html
