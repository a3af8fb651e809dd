#pragma once
/// The one verdict vocabulary, from a checker to report.json and the exit status (docs/verdicts.md):
///   pass     every invariant holds, with one explanation, and every fault fired
///   fail     a violation is proven
///   unknown  the history does not decide (an ambiguity, a limit of the harness, a fault that never fired)
///   error    the run could not be judged at all (a target that cannot start, a server error)
///   flaky    runs of one schedule disagreed (check, replay)
///   n/a      a comparison cell with no schedule (the target has no kill point of that class)
/// A checker answers pass, fail or unknown; a run adds error; a command adds flaky.
#include <string>

namespace idem {

enum class Verdict { Pass, Fail, Unknown, Error, Flaky, NotApplicable };

/// "pass" | "fail" | "unknown" | "error" | "flaky" | "n/a"
const char* toString(Verdict v);
/// The inverse of toString; throws std::invalid_argument naming the word.
Verdict verdictFromString(const std::string& word);
/// 0 pass, 1 fail, 2 anything else (unknown, error, flaky: the result cannot be judged).
int exitStatus(Verdict v);

} // namespace idem
