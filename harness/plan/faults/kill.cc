/// kill: SIGKILL the consumer's process group at the step. `before:` withholds the request (the server never
/// sees it; a transaction in flight rolls back); `after:` lets it take effect and withholds its reply. The
/// kind of every kill point (`after:COMMIT#3` is `kill:after:COMMIT#3`).
#include "plan/faults/kinds.h"

namespace idem::faults {

std::unique_ptr<FaultKind> makeKill() {
  return std::make_unique<PlainKind>("kill",
                       "[kill:]before|after:VERB#k   SIGKILL the consumer's process group; before: the server never "
                       "sees the request, after: it takes effect and its reply is withheld",
                       Effect::Action::Kill, 1, true);
}

} // namespace idem::faults
