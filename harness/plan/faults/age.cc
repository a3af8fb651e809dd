/// age: simulated time passes for the consumer's dedup state, so that a run need not wait a day for a mark
/// to expire or a retention job to prune it. At the step (which waits meanwhile) the harness, on its own
/// connections, moves every Valkey key with a TTL forward by MS (`PEXPIRE key (left − MS)`, a key with
/// nothing left deleted) and runs the scenario's `prune` statement with the target's retention less MS.
/// Without MS the time is the scenario's `retry_window_ms`: the latest a producer retry may come, which
/// must still be deduplicated. A retry the producer sends later is judged against the window
/// (checkers: `dedup-window`); docs/faults.md, "Dedup state that ages".
#include "plan/faults/kinds.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace idem::faults {

namespace {

class Age : public FaultKind {
public:
  std::string name() const override { return "age"; }
  std::string usage() const override {
    return "age:before|after:VERB#k[:MS]   MS ms pass for the dedup state (default: the scenario's retry_window_ms): "
           "Valkey TTLs run down, the scenario's prune runs";
  }
  void check(const Fault& f, const std::string& what) const override {
    if (f.args.size() > 1)
      throw UsageError(fmt::format("{}: an age fault takes at most one argument, MS (age:before|after:VERB#k[:MS])", what));
    if (f.args.empty()) return;
    const std::string& ms = f.args[0];
    if (ms.empty() || ms.size() > 12 || !std::all_of(ms.begin(), ms.end(), [](unsigned char c) { return std::isdigit(c); }) ||
        std::stoll(ms) < 1 || std::stoll(ms) > kMaxAgeMs)
      throw UsageError(fmt::format("{}: the age MS must be a whole number of milliseconds from 1 to {} (a year)", what,
                                   kMaxAgeMs));
  }
  /// `time` 0: the scenario's retry window, which the supervisor knows (ageMs).
  Effect effect(const Fault& f) const override {
    Effect e{Effect::Action::Age, std::chrono::milliseconds(f.args.empty() ? 0 : std::stoll(f.args[0])), {}, {}, {}, false};
    return e;
  }
  /// Time passing delivers nothing: a retry after it is a delivery of its own, counted as such.
  int weight() const override { return 0; }
  /// After each step: the state the step left ages (before a step ages the same state as after the one
  /// before it).
  std::optional<Fault> sweptAt(const Fault& point, const std::string&, int) const override {
    if (point.when == When::Before) return std::nullopt;
    Fault f = point;
    f.kind = "age";
    f.args.clear();
    return f;
  }
  std::string phrase(const Fault& f, const std::string&,
                     const std::function<std::string(const std::string&)>&) const override {
    return "the dedup state aged at " + f.str();
  }
  bool leavesAftermath() const override { return false; } // the process was told nothing
  /// A retry is judged only when the schedule sends one after the ageing: asked for (--faults age).
  bool drawnByDefault() const override { return false; }
  bool judgedByLateRetry() const override { return true; }
  FaultClass sweepClass(const Fault&) const override {
    return {"age", "dedup window",
            "age:after:VERB#k: the dedup state aged by the retry window (marks' TTLs, the prune), then the producer "
            "retries an event already applied: it must still be deduplicated"};
  }
};

} // namespace

std::unique_ptr<FaultKind> makeAge() { return std::make_unique<Age>(); }

} // namespace idem::faults
