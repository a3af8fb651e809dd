/// delay: hold the step's request (`before:`, the server sees it late) or its reply (`after:`, it has
/// taken effect; the client learns it late) for MS milliseconds, then let it through — past a client's
/// own timeout, or past CLAIM_IDLE_MS so that another consumer may claim the entries in hand.
#include "plan/faults/kinds.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace idem::faults {

namespace {

/// The longest delay: longer ones are a hang, which the run's deadline handles better.
constexpr int kMaxDelayMs = 600000;

class Delay : public FaultKind {
public:
  std::string name() const override { return "delay"; }
  std::string usage() const override {
    return "delay:before|after:VERB#k:MS   hold the request (before) or its reply (after) MS milliseconds";
  }
  void check(const Fault& f, const std::string& what) const override {
    requireArgs(f, 1, what, "delay:before|after:VERB#k:MS");
    const std::string& ms = f.args[0];
    if (ms.empty() || ms.size() > 6 || !std::all_of(ms.begin(), ms.end(), [](unsigned char c) { return std::isdigit(c); }) ||
        std::stoi(ms) < 1 || std::stoi(ms) > kMaxDelayMs)
      throw UsageError(fmt::format("{}: the delay MS must be a whole number of milliseconds from 1 to {}", what,
                                   kMaxDelayMs));
  }
  Effect effect(const Fault& f) const override {
    return Effect{Effect::Action::Delay, std::chrono::milliseconds(std::stoi(f.args[0])), {}, {}, {}, false};
  }
  int weight() const override { return 2; } // past its own timeout, the consumer may redo the work
  bool atHttpServer() const override { return true; }
  std::optional<Fault> sweptAt(const Fault& point, const std::string&, int delayMs) const override {
    Fault f = point;
    f.kind = "delay";
    f.args = {std::to_string(delayMs)};
    return f;
  }
  std::string phrase(const Fault& f, const std::string& process,
                     const std::function<std::string(const std::string&)>&) const override {
    return process + " delayed at " + f.str();
  }
  FaultClass sweepClass(const Fault& f) const override {
    const bool before = f.when == When::Before;
    const std::string ms = f.args.empty() ? "" : f.args[0];
    return {before ? "delay:before" : "delay:after", before ? "request delayed" : "reply delayed",
            fmt::format("delay:{}:VERB#k:{}: held {} ms, past CLAIM_IDLE_MS", before ? "before" : "after", ms, ms)};
  }
};

} // namespace

std::unique_ptr<FaultKind> makeDelay() { return std::make_unique<Delay>(); }

} // namespace idem::faults
