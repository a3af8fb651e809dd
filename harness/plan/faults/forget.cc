/// forget: the broker forgets deliveries and acknowledgements, as after a failover to a replica that lags
/// behind (it has the stream's entries, not yet the group's reads and XACKs). At the step (which waits
/// meanwhile) the harness moves the group's last-delivered id back to the start of the stream
/// (XGROUP SETID … 0): every entry sent so far is delivered again to the next XREADGROUP … >, also those
/// acknowledged long ago. A consumer's dedup must absorb it; one without dedup applies them twice.
#include "plan/faults/kinds.h"

namespace idem::faults {

namespace {

class Forget : public PlainKind {
public:
  Forget()
      : PlainKind("forget",
                  "forget:before|after:VERB#k   the broker forgets what it delivered and what was acknowledged "
                  "(a failover to a lagging replica): every entry is delivered again",
                  Effect::Action::Forget) {}
  /// After a broker's steps: what the broker did at the step is then among what it forgets.
  std::optional<Fault> sweptAt(const Fault& point, const std::string& server, int delayMs) const override {
    if (point.when == When::Before || server == "pg") return std::nullopt;
    return PlainKind::sweptAt(point, server, delayMs);
  }
  std::string phrase(const Fault& f, const std::string&,
                     const std::function<std::string(const std::string&)>&) const override {
    return "the broker forgot what the group had acknowledged at " + f.str();
  }
  bool leavesAftermath() const override { return false; } // the broker forgot; the process was told nothing
  FaultClass sweepClass(const Fault&) const override {
    return {"forget", "broker forgets acks",
            "forget:after:VERB#k after each Valkey step: every entry is delivered again (a lagging replica)"};
  }
};

} // namespace

std::unique_ptr<FaultKind> makeForget() { return std::make_unique<Forget>(); }

} // namespace idem::faults
