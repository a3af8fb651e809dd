/// hold: withhold one process's request (`before:`) or reply (`after:`) at its step, while the other
/// processes run freely — an interleaving as a fault value. It is released when
///
///   hold:c1:before:COMMIT#1:c2:after:XACK#1   process c2 reaches (before) or passes (after) its point;
///   hold:c1:before:COMMIT#1:250               250 ms have passed (e.g. past CLAIM_IDLE_MS);
///   hold:c1:before:COMMIT#1                   every other live process is idle;
///
/// and in any case when it can't be met: every other process idle, or one of them waiting on a PostgreSQL
/// lock (the held process's open transaction may hold it), or the stall time passed. The release and its
/// reason are noted in the history; a hold never hangs a run.
#include "plan/faults/kinds.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

namespace idem::faults {

namespace {

constexpr Release kHoldRelease{"hold", "releases at", "holds", 0, "hold:cN:before|after:VERB#k[:MS | :cM:before|after:VERB#j]"};

class Hold : public FaultKind {
public:
  std::string name() const override { return "hold"; }
  std::string usage() const override {
    return "hold:cN:before|after:VERB#k[:MS | :cM:before|after:VERB#j]   withhold cN's request or reply until cM "
           "reaches its point, MS ms pass, or every other process is idle";
  }
  void check(const Fault& f, const std::string& what) const override {
    if (f.process.empty())
      throw UsageError(fmt::format("{}: a hold names the process it holds, e.g. hold:c1:before:COMMIT#1 ({})", what,
                                   kHoldRelease.form));
    kHoldRelease.check(f, what);
  }
  Effect effect(const Fault& f) const override {
    return kHoldRelease.effect(f, Effect{Effect::Action::Hold, {}, {}, {}, {}, false});
  }
  std::string phrase(const Fault& f, const std::string& process,
                     const std::function<std::string(const std::string&)>&) const override {
    return process + " held at " + f.str();
  }
};

} // namespace

std::unique_ptr<FaultKind> makeHold() { return std::make_unique<Hold>(); }

} // namespace idem::faults
