#pragma once
/// Internal: the checkers of an HTTP scenario (http.cc), each a name and a function that judges the history.
#include "checkers/checkers.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace idem::detail {

/// "http:exactly-once", "http:ledger", "http:replay", "http:status", "http:mismatch", "http:missing-key",
/// "http:burst", "http:liveness", in this order. Throws when the history has no plan op.
std::vector<std::pair<std::string, std::function<CheckResult()>>> httpCheckers(const Scenario& s,
                                                                                const std::vector<Op>& ops);

} // namespace idem::detail
