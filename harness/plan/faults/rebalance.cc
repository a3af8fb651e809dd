/// rebalance: a member joins the consumer group at the step, so that the group's partitions are dealt
/// again while the process at the step is in the middle of its batch. The harness starts one more
/// consumer process of the target (the next cN), and the step waits until the newcomer has read from the
/// broker and is idle: by then the group has rebalanced around the waiting process, and the newcomer has
/// read its partitions from the group's committed offsets — records the waiting process still holds among
/// them. The wait ends early, as a hold's does, when a process waits on a PostgreSQL lock or the stall time
/// passes. Then the step goes on: the waiting process finishes its batch and commits, also offsets of
/// partitions that are no longer its own.
///
///   rebalance:after:SELECT#3        a member joins while c1's check of its third record has just answered
///
/// Only a broker with consumer groups whose members share the stream's partitions has it (Kafka).
#include "plan/faults/kinds.h"

namespace idem::faults {

namespace {

class Rebalance : public PlainKind {
public:
  Rebalance()
      : PlainKind("rebalance",
                  "rebalance:before|after:VERB#k   a consumer joins the group while the step waits: the partitions "
                  "are dealt again in the middle of a batch (Kafka)",
                  // Up to three more deliveries of an entry: the newcomer reads what the waiting one holds, and a
                  // dropped member re-fetches its batch at each rejoin (an entry delivered four times in all was
                  // seen with two consumers on a loaded machine); the values stay decodable for that many.
                  Effect::Action::Join, 3) {}
  std::string phrase(const Fault& f, const std::string& process,
                     const std::function<std::string(const std::string&)>&) const override {
    return "a consumer joined the group at " + f.str() + " while " + process + " waited";
  }
  bool leavesAftermath() const override { return false; } // the waiting process is told nothing
  std::string brokerFeature() const override { return "rebalance"; }
  /// Seconds of the group's own waits per schedule (13-19 s on the embedded broker): asked for, not drawn.
  bool drawnByDefault() const override { return false; }
  FaultClass sweepClass(const Fault&) const override {
    return {"rebalance", "group rebalanced mid-batch",
            "rebalance:before|after:VERB#k: the group drops the consumer, a new member takes its partitions"};
  }
};

} // namespace

std::unique_ptr<FaultKind> makeRebalance() { return std::make_unique<Rebalance>(); }

} // namespace idem::faults
