#pragma once
/// Internal: which application counts explain an observed value. Each distinct group of events on a key
/// moves the observed value by its `amount` every time it is applied, and it was applied between `lo` and
/// `hi` times (hi: how often it could have been, from its deliveries). explain() enumerates every vector of
/// application counts that adds up to the observed difference. A pass needs exactly one explanation — every
/// group once; a second one (one event twice and another never, ...) makes the observation ambiguous.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace idem::detail {

struct Unit {
  int64_t amount = 0;
  int lo = 0;
  int hi = 1;
};

struct Explanations {
  /// Application counts m (units[i].lo <= m[i] <= units[i].hi) with Σ m[i] * amount[i] == total, those
  /// closest to "every unit once" first (fewest units off, then smallest total deviation).
  std::vector<std::vector<int>> solutions;
  /// False when the enumeration stopped early (solution or node budget): more solutions may exist.
  bool complete = true;
};

/// Every explanation of `total`, up to `maxSolutions`. Units of equal amount are searched as one class (the
/// class's total count), then spread over its members, so many equal amounts cost no more than one.
Explanations explain(const std::vector<Unit>& units, int64_t total, size_t maxSolutions = 32,
                     size_t maxNodes = 2'000'000);

/// How many units of `m` differ from 1.
int deviations(const std::vector<int>& m);

} // namespace idem::detail
