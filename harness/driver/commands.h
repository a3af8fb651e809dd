#pragma once
/// The judging commands. Each returns the process exit status: 0 every invariant holds, 1 one is
/// violated, 2 the result cannot be judged (error, unknown, a kill point that never fired).
#include "driver/session.h"

#include <string>
#include <vector>

namespace idem {

struct RunArgs {
  int events = 0;                   ///< 0: the scenario's default schedule
  std::vector<std::string> crashes; ///< --crash after:COMMIT#3 (repeatable)
  std::string restart = "new-name";
};

int runCommand(const CommonArgs& common, const RunArgs& args);
int sweepCommand(const CommonArgs& common);

/// A schedule of `events` events drawn from the scenario's generators with `seed` (keys, ints, picks),
/// sent in order, followed by a retry of event 2 (when there are two or more).
Schedule generatedSchedule(const Scenario& sc, int events, uint64_t seed);

/// Exit status for a verdict word.
int exitStatus(const std::string& verdict);

/// The report fields every command shares.
nlohmann::json reportHeader(const std::string& command, const Session& session, const std::string& verdict);

/// One line of a violation for the terminal: "duplicate  balance w1: expected 25000, observed 30000: event 2 applied twice".
std::string violationLine(const Violation& v);

} // namespace idem
