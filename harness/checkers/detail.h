#pragma once
/// Internal: the individual checkers behind checkAll, one file each. Each may throw; checkAll turns an
/// exception into Unknown.
#include "checkers/checkers.h"
#include "checkers/history_view.h"

#include <string>
#include <vector>

namespace idem::detail {

/// Dispatches on inv.kind.
CheckResult checkInvariant(const Scenario& s, const Invariant& inv, const HistoryView& h);
/// sum-of-distinct and count-of-distinct.
CheckResult checkSums(const Invariant& inv, const HistoryView& h);
CheckResult checkLatestVersion(const Invariant& inv, const HistoryView& h);
CheckResult checkFinalValue(const Invariant& inv, const HistoryView& h);
CheckResult checkOneRowPerEvent(const Invariant& inv, const HistoryView& h);
/// Entries left pending or never delivered (from the final op).
CheckResult checkBroker(const HistoryView& h);
/// Consumers that died by themselves.
CheckResult checkProcesses(const HistoryView& h);
/// Kill points of the plan that never fired.
CheckResult checkFaults(const HistoryView& h);
/// Connections the proxies could not decode: Unknown when they could hide deliveries or acknowledgements
/// (Valkey), or the step a planned kill point names (PostgreSQL, with kill points).
CheckResult checkObservation(const HistoryView& h);
/// Poison events (poison.cc): each in the dead letter exactly once with its id; delivered at most
/// max_deliveries times per entry; every other event acknowledged and the invariants (poison left out)
/// holding; no effect of a poison event on the invariants' rows.
CheckResult checkPoisonDeadLettered(const HistoryView& h);
CheckResult checkPoisonBounded(const HistoryView& h);
CheckResult checkPoisonNoBlock(const HistoryView& h, const std::vector<CheckResult>& invariants);
CheckResult checkPoisonNotApplied(const HistoryView& h);
/// The sink (sink.cc, docs/sink.md): every delivered event executed once at the sink (charged twice, never
/// charged, a charge of no event); once the run is over, booked in the database (the final op's rows of
/// kSinkBooked) exactly when executed at the sink; under a provider that honours keys, one key per event.
CheckResult checkSinkExactlyOnce(const HistoryView& h);
CheckResult checkSinkAgreement(const HistoryView& h);
CheckResult checkSinkKeyStable(const HistoryView& h);
/// The name the harness records the scenario's sink.booked rows under in the initial and final ops.
inline constexpr const char* kSinkBooked = "sink:booked";
/// The provider's policy a run's sink followed: the plan's, else the scenario's ("honour" | "ignore").
std::string sinkPolicyOf(const Scenario& s, const std::vector<Op>& history);
/// "error" ops: the run could not be judged.
CheckResult checkRun(const std::vector<Op>& ops);

/// Fail when there are violations, else unknown when there are reasons, else pass.
CheckResult resultOf(std::vector<Violation> violations, const std::vector<std::string>& unknownReasons);

/// The violations a run that ended at a limit (HistoryView::end) proves: only effects more time can't undo
/// (duplicate, phantom). The others become reasons for unknown: the consumer may still have written them.
std::vector<Violation> provenOnly(const HistoryView& h, std::vector<Violation> vs, std::vector<std::string>& unknown);

/// How an invariant names a distinct group: "event 2", or "order 2 (event 2)" when the invariant is
/// distinct by another field than the event id.
std::string groupLabel(const Invariant& inv, const HistoryView& h, const Group& g);

/// Names `groups` in the violation: events, ops, entries, kill point, and the message
/// "<phrase of each>: <story of each>; <numbers>". `applied[i]` is how often groups[i] was applied
/// (0 = not at all: "lost" when it was acknowledged; "not applied" and kind "stuck" when none was).
void nameGroups(Violation& v, const Invariant& inv, const HistoryView& h, const std::vector<const Group*>& groups,
                const std::vector<int>& applied, const std::string& numbers);

} // namespace idem::detail
