/// timekill: SIGKILL a consumer process's group a time after it was spawned, wherever it is in its work:
/// `timekill:c1:after:SPAWN#1:350` kills c1 350 ms after its spawn (`350.125`: to the microsecond), from a timer
/// thread of the supervisor, at that instant wherever the process is. This is the kill of timer-based chaos
/// tools (kill a pod at a random moment), kept for comparison (bench/first_bug_bench.cc): the supervisor
/// carries it out (no proxy step has the verb SPAWN) and treats it as a kill point, restarting the consumer.
/// `check` never draws it and `sweep` never sweeps it (FaultKind::atStep is false, and --faults can't name
/// it); a schedule file may hold it, and `idemproof replay` runs it. Where the kill lands depends on timing:
/// a replay may kill the process at another step.
#include "plan/faults/kinds.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace idem::faults {

namespace {

constexpr const char* kTimeKillForm = "timekill:cN:after:SPAWN#1:MS";

class TimeKill : public FaultKind {
public:
  std::string name() const override { return "timekill"; }
  std::string usage() const override {
    return "timekill:cN:after:SPAWN#1:MS   SIGKILL process cN's group MS ms after it was spawned (not drawn by "
           "check or sweep)";
  }
  void check(const Fault& f, const std::string& what) const override {
    requireArgs(f, 1, what, kTimeKillForm);
    requireWhen(f, When::After, what, "it acts a time after the process's spawn");
    if (f.process.empty() || f.verb != "SPAWN" || f.k != 1)
      throw UsageError(fmt::format("{}: a timekill names its process and the step SPAWN#1 ({})", what, kTimeKillForm));
    // Milliseconds, with up to three decimals (a random moment is drawn to the microsecond).
    const std::string& ms = f.args[0];
    const auto dot = ms.find('.');
    const std::string whole = ms.substr(0, dot), frac = dot == std::string::npos ? "" : ms.substr(dot + 1);
    auto digits = [](const std::string& d) { return std::all_of(d.begin(), d.end(), ::isdigit); };
    if (whole.empty() || whole.size() > 7 || !digits(whole) || (dot != std::string::npos && (frac.empty() || frac.size() > 3 || !digits(frac))))
      throw UsageError(fmt::format("{}: a timekill's time is a number of milliseconds up to 9999999, with up to three "
                                   "decimals ({})", what, kTimeKillForm));
  }
  Effect effect(const Fault& f) const override {
    return Effect{Effect::Action::Kill, std::chrono::duration_cast<std::chrono::milliseconds>(timeKillDelay(f)), {}, {}, {}, false};
  }
  bool atStep() const override { return false; }
};

} // namespace

std::unique_ptr<FaultKind> makeTimeKill() { return std::make_unique<TimeKill>(); }

} // namespace idem::faults

namespace idem {

std::chrono::microseconds timeKillDelay(const Fault& f) {
  const std::string& ms = f.args.at(0);
  const auto dot = ms.find('.');
  std::string frac = dot == std::string::npos ? "" : ms.substr(dot + 1);
  frac.resize(3, '0'); // "125" µs of "35.125"; "5" -> "500"
  return std::chrono::microseconds(std::stoll(ms.substr(0, dot)) * 1000 + std::stoll(frac));
}

} // namespace idem
