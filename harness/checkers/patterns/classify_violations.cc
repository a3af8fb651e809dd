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
    // An HTTP key that executed twice also replays an answer that differs (the second execution's) or a
    // wrong status: those violations of the key are the double effect's, and name its pattern.
    for (auto& r : results)
      for (auto& v : r.violations) {
        if (v.pattern || v.key.empty() || v.kind == "double-effect" || v.invariant.rfind("http:", 0) != 0) continue;
        for (const auto& other : results)
          for (const auto& d : other.violations)
            if (!v.pattern && d.kind == "double-effect" && d.key == v.key && d.pattern) v.pattern = d.pattern;
      }
  } catch (const std::exception&) {
    // A history the view cannot index: no pattern is named.
  }
}

} // namespace idem
