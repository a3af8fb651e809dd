/// drop: reset the connection at the step; the process lives and sees a connection error. `before:` the
/// server never sees the request (an open transaction rolls back when the server sees the reset);
/// `after:` the request takes effect and the reset comes before its reply — the ambiguous commit: the
/// client can't know whether its COMMIT or XACK happened.
#include "plan/faults/kinds.h"

namespace idem::faults {

std::unique_ptr<FaultKind> makeDrop() {
  return makePlainKind("drop",
                       "drop:before|after:VERB#k   reset the connection (the process lives); before: the server never "
                       "sees the request, after: it takes effect and the reply is lost",
                       Effect::Action::Drop, 2, true); // the consumer may rerun what it holds, then exit
}

} // namespace idem::faults
