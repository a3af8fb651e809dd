/// The runs of a check's search: counted by verdict (check.passed, .failed, ...), and listed only when
/// they did not pass or a fault of theirs never fired, the first kPageRuns of them (from
/// check.run_summaries): a page of 10,000 runs stays a page, and report.json keeps every run's summary.
/// check_report.cc gives the page only those runs (and one more, to say there are more).
#include "report/check_section.h"
#include "report/html.h"
#include "report/html_util.h"

#include <fmt/format.h>

namespace idem::html {

namespace {

std::string joinedWords(const std::vector<std::string>& list) {
  std::string out;
  for (const auto& x : list) out += (out.empty() ? "" : ", ") + x;
  return out;
}

} // namespace

std::string searchRuns(const json& section, const Anchors& anchors) {
  const CheckSection check = section.get<CheckSection>();
  const int64_t total = check.runs;
  if (total == 0) return "";
  std::string rows;
  size_t listed = 0;
  bool more = false;
  for (const auto& r : check.runSummaries) {
    const std::string verdict = toString(r.verdict);
    const bool loss = r.fired.size() < r.planned.size();
    if (verdict == "pass" && !loss) continue;
    if (listed == kPageRuns) {
      more = true;
      break;
    }
    ++listed;
    const std::string n = std::to_string(r.run);
    // The failing run is the counterexample's found run; an unknown one may be kept as run-N.
    const bool found = r.verdict == Verdict::Fail && check.counterexample && check.counterexample->found.run == r.run;
    std::string why = r.verdict == Verdict::Fail ? joinedWords(r.kinds.value_or(std::vector<std::string>()))
                                                 : r.reason.value_or("");
    if (loss && why.empty()) why = "a fault never fired";
    rows += fmt::format("<tr><td class=\"n\">{}</td><td class=\"cell {}\">{}</td><td class=\"mono\">{}</td>"
                        "<td class=\"mono\">{}</td><td>{}</td></tr>",
                        linkTo(anchors, found ? "counterexample" : "run-" + n, n), verdictClass(verdict), esc(verdict),
                        esc(joinedWords(r.planned)), esc(joinedWords(r.fired)), esc(cut(why, 200)));
  }
  std::string counts;
  for (const auto& [n, word] : {std::pair{check.passed, "pass"}, {check.failed, "fail"}, {check.unknown, "unknown"},
                                {check.errors, "error"}})
    if (n > 0) counts += fmt::format("{}<b>{}</b> {}", counts.empty() ? "" : ", ", n, word);
  const int64_t lost = check.coverageSummary.runsWithLoss;
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
