#pragma once
/// Whether the reduced selection of a sweep (history/point_class.h) finds what the exhaustive sweep found,
/// from the exhaustive sweep's fault-free baseline and the verdict of each of its points. Classes and the
/// selection are pure functions of the baseline, so this judges a recorded sweep (tests/golden/sweeps, the
/// unit test) exactly as a live one (tests/integration/sweep_reduce_test.cc).
#include "history/point_class.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace idem::testing {

struct ReductionCheck {
  size_t traced = 0;   ///< points of the baseline's trace
  size_t selected = 0; ///< of them in the reduced selection
  size_t classes = 0;
  size_t failed = 0;   ///< points whose verdict is fail
  std::vector<std::string> unjudged; ///< points of the trace with no verdict: the sweep was not exhaustive
  std::vector<std::string> missed;   ///< classes with a failing point, none of them selected
};

/// `verdicts`: the verdict of each point the exhaustive sweep ran ("after:COMMIT#2" -> "fail").
inline ReductionCheck checkReduction(const std::vector<Op>& baseline, const std::map<std::string, std::string>& verdicts) {
  ReductionCheck out;
  auto trace = traceOf(baseline);
  auto classes = classifyPoints(baseline, trace.points);
  auto selection = reducedSelection(classes);
  const std::set<size_t> picked(selection.begin(), selection.end());
  out.traced = trace.points.size();
  out.selected = picked.size();
  out.classes = classCount(classes);
  std::map<std::string, bool> failing; // class -> a selected point of it failed
  for (size_t i = 0; i < trace.points.size(); ++i) {
    auto v = verdicts.find(trace.points[i].fault.str());
    if (v == verdicts.end()) {
      out.unjudged.push_back(trace.points[i].fault.str());
      continue;
    }
    if (v->second != "fail") continue;
    ++out.failed;
    auto& found = failing[classes[i].key];
    found = found || picked.count(i) > 0;
  }
  for (const auto& [cls, found] : failing)
    if (!found) out.missed.push_back(cls);
  return out;
}

} // namespace idem::testing
