#include "checkers/checkers.h"
#include "checkers/patterns/patterns.h"

#include <exception>

namespace idem {

void classifyViolations(const Scenario& s, const std::vector<Op>& history, std::vector<CheckResult>& results) {
  if (merge(results) != Verdict::Fail) return; // a run that does not fail is never classified
  try {
    const detail::HistoryView h(s, history);
    for (auto& r : results) {
      if (r.verdict != Verdict::Fail) continue;
      for (auto& v : r.violations) {
        // A classifier that throws names nothing: the plain diagnosis stays.
        try {
          v.pattern = detail::patterns::classify(h, v);
        } catch (const std::exception&) {
          v.pattern.reset();
        }
      }
    }
  } catch (const std::exception&) {
    // A history the view cannot index: no pattern is named.
  }
}

} // namespace idem
