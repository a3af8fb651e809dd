#pragma once
/// Values idemproof chooses so that a pass can't be a coincidence (docs/verdicts.md).
///
/// sum-of-distinct over an `int` field: on each key, the distinct groups of events are the places of a
/// mixed-radix number. A group may be applied at most as often as its entries are delivered, and an entry is
/// delivered once plus once after each kill of the schedule: cap = entries × (1 + kills). Sorted by cap (the
/// largest on top), the group at place i gets the amount u·Π_{j<i} (cap_j + 1), with u = max(1, min) (or
/// -max(1, -max) for a range of negative amounts), while it fits in [min, max]. Any application counts
/// c_j ≤ cap_j then give distinct sums (the digits of a mixed-radix number; the top place takes any count),
/// so "every event once" is the only explanation of the expected value, and a wrong value names its events
/// exactly. Past the capacity of the range, amounts come from a fixed pseudo-random sequence, distinct per
/// key; more deliveries than planned (a stall restart) may exceed a place too. In both cases the checker
/// decides ambiguity exactly and says unknown rather than pass when another combination fits.
///
/// latest-version whose columns do not include the version field: the versions of one key carry distinct
/// values of the drawn (pick, int) column fields, as far as the generator has values.
#include "plan/schedule.h"
#include "scenario/scenario.h"

#include <string>

namespace idem {

/// Re-values the drawn fields of `s` as above, for a schedule with `kills` kill points (its own unless the
/// values must hold for variants of it: a sweep values its base for one kill). Returns what was chosen, for
/// reports, or "" when nothing applies.
std::string makeDecodable(const Scenario& sc, Schedule& s, int kills);

/// The groups per key that makeDecodable can value uniquely for `inv` when every group may be applied up
/// to `maxCount` times (0 when it does not apply).
int decodableCapacity(const Scenario& sc, const Invariant& inv, int maxCount);

} // namespace idem
