/// kill: SIGKILL the consumer's process group at the step. `before:` withholds the request (the server never
/// sees it; a transaction in flight rolls back); `after:` lets it take effect and withholds its reply. The
/// kind of every kill point (`after:COMMIT#3` is `kill:after:COMMIT#3`).
#include "plan/faults/kinds.h"

#include "core/error.h"

#include <fmt/format.h>

namespace idem::faults {

namespace {

class Kill : public FaultKind {
public:
  std::string name() const override { return "kill"; }
  std::string usage() const override {
    return "[kill:]before|after:VERB#k   SIGKILL the consumer's process group; before: the server never sees the "
           "request, after: it takes effect and its reply is withheld";
  }
  void check(const Fault& f, const std::string& what) const override {
    if (!f.args.empty()) throw UsageError(fmt::format("{}: a kill takes no arguments", what));
  }
  Effect effect(const Fault&) const override { return Effect{Effect::Action::Kill, {}, {}, {}}; }
};

} // namespace

std::unique_ptr<FaultKind> makeKill() { return std::make_unique<Kill>(); }

} // namespace idem::faults
