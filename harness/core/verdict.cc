#include "core/verdict.h"

#include <stdexcept>

namespace idem {

namespace {

const std::pair<Verdict, const char*> kWords[] = {
    {Verdict::Pass, "pass"},   {Verdict::Fail, "fail"},   {Verdict::Unknown, "unknown"},
    {Verdict::Error, "error"}, {Verdict::Flaky, "flaky"}, {Verdict::NotApplicable, "n/a"},
};

} // namespace

const char* toString(Verdict v) {
  for (const auto& [x, word] : kWords)
    if (x == v) return word;
  return "unknown";
}

Verdict verdictFromString(const std::string& word) {
  for (const auto& [x, w] : kWords)
    if (word == w) return x;
  throw std::invalid_argument("'" + word + "' is not a verdict (pass, fail, unknown, error, flaky, n/a)");
}

int exitStatus(Verdict v) {
  if (v == Verdict::Pass) return 0;
  if (v == Verdict::Fail) return 1;
  return 2;
}

} // namespace idem
