#pragma once
/// Equivalence classes of the kill points of a fault-free trace, and the reduced selection a long sweep
/// runs (docs/faults.md, "Reduced sweeps"). Both are pure functions of the trace, so every shard of a
/// sweep, which runs the same baseline, selects the same points.
///
/// A point's class is
///   (before|after, the step's verb, the verb of the process's step before it, the role of the entry the
///    step works on, whether that entry is the schedule's last)
/// where the entry a step works on is the one whose work holds it (entryWork, history/trace.h), and its
/// role one of:
///   start       no entry yet: the process's steps before the read that first handed it entries
///   first       the first delivery of an event the producer sent once so far
///   retry       the producer's retry of an event sent before (ops::Send::retry)
///   redelivery  an entry delivered again: claimed (XCLAIM, XAUTOCLAIM) or read a second time
///   end         after the process's last acknowledgement (or work it never acknowledged)
/// Points of one class run the same steps in the same kind of state; they differ in how many entries came
/// before, which is what the selection samples.
#include "history/trace.h"

#include <string>
#include <vector>

namespace idem {

struct PointClass {
  std::string key;    ///< "after:COMMIT prev=UPDATE role=first", "... role=retry,last"
  std::string role;   ///< start | first | retry | redelivery | end
  bool last = false;  ///< the step works on the schedule's last entry (the last one sent)
  /// The step works on an entry next to a producer retry: the retried event's first delivery, or the
  /// process's entry just before or just after the retry.
  bool nearRetry = false;
};

/// The class of each of `points` (traceOf(history).points), in the same order.
std::vector<PointClass> classifyPoints(const std::vector<Op>& history, const std::vector<TracePoint>& points);

/// The number of distinct classes.
size_t classCount(const std::vector<PointClass>& classes);

/// The reduced selection: per class (in trace order) its first point, its middle one, its last, and every
/// point near a producer retry. Indices into `classes`, ascending.
std::vector<size_t> reducedSelection(const std::vector<PointClass>& classes);

/// A sweep runs every point up to this many; above it, the reduced selection (sweep --exhaustive runs
/// every point, --reduce-above N moves the bound). The built-in scenarios' default schedules trace 22
/// (versioned-guard) to 70 (check-then-act) points on the reference targets, so their sweeps stay
/// exhaustive (the wallet sweeps people know, 64 points on dedup-table, keep their grid whole); a
/// generated 50-event wallet schedule traces about 520.
constexpr int kSweepReduceAbove = 100;

} // namespace idem
