#pragma once
/// The deterministic shapes of a failing schedule, tried before replays may call it flaky and before it is
/// shrunk (docs/verdicts.md, "Flaky"). Where work runs at once its order is left to timing, and a failure
/// found there may replay differently; the same bug is often there without the concurrency: a burst of
/// copies sent one after another, a request answered before the next, a hold removed, two consumers made
/// one. Each reduction is the failing
/// shape's shrink tree with the change applied at every node, so that shrinking goes on from it as from the
/// shape itself.
#include "plan/schedule.h"
#include "search/model.h"

#include <rapidcheck/Shrinkable.h>

#include <string>
#include <vector>

namespace idem {

struct Reduction {
  std::string what; ///< "one consumer", "no holds", "hold 2 removed", "bursts sent one after another"
  rc::Shrinkable<Shape> shape;
};

/// The reductions of `failing`, the most deterministic first; empty when nothing in it runs at once:
///  - consumer schedules with two consumers or more, holds or retries sent in flight: one consumer
///    (p.minConsumers, when fewer than the shape's) with no holds and no retry in flight; then the same
///    consumers with no holds; then each hold removed alone (with two holds or more);
///  - HTTP schedules with a burst or a send left in flight (a timeout, a cut): every request one after
///    another, each waiting for its answer (a burst of N copies becomes N sends of its key, the last with
///    the other payload when the burst had one), with no kill; then the same with the kills kept; then,
///    when there were both, only the bursts sent one after another.
std::vector<Reduction> deterministicShapes(const rc::Shrinkable<Shape>& failing, const ModelParams& p);

/// Whether the order of a schedule's work is left to timing: two consumers or more (holds among them), an
/// HTTP burst, or a send that does not wait for its answer (it times out while the server works, or cuts
/// the connection). A shrink candidate that is concurrent is accepted only when it fails in every replay.
bool concurrent(const Schedule& s);

} // namespace idem
