#pragma once
// What the verdict tests share (report/check_verdict.h, and driver/ through it): a run's faults added to
// a coverage by their text forms, and whether a note says something.
#include "report/check_verdict.h"

#include <algorithm>
#include <string>
#include <vector>

namespace idem::testing {

/// One run of `processes` consumers that planned `planned` and fired `fired`, added to `c`.
inline void addRun(FaultCoverage& c, const std::vector<std::string>& planned, const std::vector<std::string>& fired,
                   int processes = 1) {
  std::vector<Fault> p, f;
  for (const auto& x : planned) p.push_back(Fault::parse(x));
  for (const auto& x : fired) f.push_back(Fault::parse(x));
  c.add(p, f, processes);
}

/// Whether one of `notes` holds `text`.
inline bool noted(const std::vector<std::string>& notes, const std::string& text) {
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

} // namespace idem::testing
