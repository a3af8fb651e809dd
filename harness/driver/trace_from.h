#pragma once
/// sweep --trace-from: the fault-free trace of an earlier run of the same schedule. A consumer whose steps
/// depend on timing (a commit on a clock, empty reads while it waits) records a trace of its own in each
/// run, so the shards of one sweep, each tracing its own fault-free run, would place their faults
/// differently; given one trace, every shard plans the same faults and merge joins them as one sweep.
#include "history/history.h"
#include "plan/schedule.h"
#include "scenario/scenario.h"

#include <string>
#include <vector>

namespace idem {

/// The history of the fault-free run in the report at `path` (a folder holding report.json, or the file):
/// the run of `idemproof run` without --crash, or a sweep's fault-free run. The run must be on the target
/// and scenario of `base`, judged pass or fail (an unknown run's steps are not certain), and its schedule
/// `base` up to the event values: re-valued as the sweep valued `base` (for `kills` kill points, when
/// `revalue`; else as written), it must be `base`. Throws UsageError naming --trace-from, the file and
/// what differs.
std::vector<Op> traceFrom(const std::string& path, const Scenario& sc, const Schedule& base, int kills, bool revalue);

} // namespace idem
