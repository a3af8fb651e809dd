/// forget: the broker forgets deliveries and acknowledgements, as after a failover to a replica that lags
/// behind (it has the stream's entries, not yet the group's reads and XACKs). At the step (which waits
/// meanwhile) the harness moves the group's last-delivered id back to the start of the stream
/// (XGROUP SETID … 0): every entry sent so far is delivered again to the next XREADGROUP … >, also those
/// acknowledged long ago. A consumer's dedup must absorb it; one without dedup applies them twice.
#include "plan/faults/kinds.h"

namespace idem::faults {

std::unique_ptr<FaultKind> makeForget() {
  return makePlainKind("forget",
                       "forget:before|after:VERB#k   the broker forgets what it delivered and what was acknowledged "
                       "(a failover to a lagging replica): every entry is delivered again",
                       Effect::Action::Forget);
}

} // namespace idem::faults
