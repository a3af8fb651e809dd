/// drop: reset the connection at the step; the process lives and sees a connection error. `before:` the
/// server never sees the request (an open transaction rolls back when the server sees the reset);
/// `after:` the request takes effect and the reset comes before its reply — the ambiguous commit: the
/// client can't know whether its COMMIT or XACK happened.
#include "plan/faults/kinds.h"

namespace idem::faults {

namespace {

class Drop : public PlainKind {
public:
  Drop()
      : PlainKind("drop",
                  "drop:before|after:VERB#k   reset the connection (the process lives); before: the server never "
                  "sees the request, after: it takes effect and the reply is lost",
                  Effect::Action::Drop, 2, true) {} // the consumer may rerun what it holds, then exit
  std::string phrase(const Fault& f, const std::string& process,
                     const std::function<std::string(const std::string&)>&) const override {
    return process + "'s connection dropped at " + f.str();
  }
  FaultClass sweepClass(const Fault& f) const override {
    if (f.when == When::Before)
      return {"drop:before", "drop before a step",
              "drop:before:VERB#k: the server never sees the request; the process lives"};
    return {"drop:after", "drop after a step (ambiguous)",
            "drop:after:VERB#k: the request takes effect, its reply is lost with the connection"};
  }
};

} // namespace

std::unique_ptr<FaultKind> makeDrop() { return std::make_unique<Drop>(); }

} // namespace idem::faults
