#include "driver/commands.h"

#include "core/error.h"
#include "core/random.h"
#include "scenario/decodable.h"

#include <fmt/format.h>

#include <iostream>
#include <set>

namespace idem {

std::string timingFlags(const RunOptions& run) {
  const RunOptions defaults;
  std::string out;
  if (run.claim_idle_ms != defaults.claim_idle_ms) out += fmt::format(" --claim-idle-ms {}", run.claim_idle_ms);
  auto duration = [&](const char* flag, std::chrono::milliseconds v, std::chrono::milliseconds d) {
    if (v != d) out += fmt::format(" {} {}ms", flag, v.count());
  };
  duration("--deadline", run.deadline, defaults.deadline);
  duration("--stall-timeout", run.stall, defaults.stall);
  duration("--settle", run.settle, defaults.settle);
  return out;
}

std::string shellQuote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:+,@") ==
                        std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

Schedule generatedSchedule(const Scenario& sc, int events, uint64_t seed) {
  if (events < 1) throw UsageError("--events: must be at least 1");
  Rng rng(seed);
  Schedule s;
  s.scenario = sc.name;
  s.seed = seed;
  for (int n = 1; n <= events; ++n) {
    Event e;
    e.n = n;
    for (const auto& f : sc.fields) {
      if (f.gen == "key") e.fields[f.name] = sc.keys[rng.below(sc.keys.size())];
      else if (f.gen == "int") e.fields[f.name] = std::to_string(rng.between(f.min, f.max));
      else if (f.gen == "pick") e.fields[f.name] = f.values[rng.below(f.values.size())];
    }
    s.events.push_back(std::move(e));
    s.stream.push_back({n, 1});
  }
  completeEvents(sc, s.events);
  if (events >= 2) s.stream.push_back({2, 1});
  s.values = makeDecodable(sc, s, 0);
  return s;
}

Schedule defaultScheduleFor(const Session& session, const std::string& target, int kills) {
  Schedule s = defaultSchedule(session.scenario());
  s.seed = session.args().seed;
  s.target = target;
  if (!session.args().scenarioValues) s.values = makeDecodable(session.scenario(), s, kills);
  return s;
}

std::string errorLine(const std::string& error, const std::map<std::string, std::string>& logs,
                      const std::filesystem::path& reportDir) {
  std::vector<std::string> paths;
  for (const auto& [label, rel] : logs) paths.push_back((reportDir / rel).string());
  std::string where;
  for (const auto& p : paths) where += (where.empty() ? "" : ", ") + p;
  return fmt::format("idemproof: {}{}", error, where.empty() ? "" : fmt::format(" (consumer output: {})", where));
}

std::string violationLine(const Violation& v) {
  std::string where = v.invariant + (v.key.empty() ? "" : " " + v.key);
  std::string values;
  if (!v.expected.is_null() && !v.observed.is_null())
    values = fmt::format(": expected {}, observed {}", v.expected.dump(), v.observed.dump());
  else if (!v.observed.is_null())
    values = fmt::format(": {}", v.observed.dump());
  return fmt::format("{:<14} {}{}{}{}", v.kind, where, values, v.message.empty() ? "" : " — ", v.message);
}

std::string patternLine(const Violation& v, bool toldBefore) {
  if (!v.pattern) return "pattern: no known pattern";
  if (toldBefore) return fmt::format("pattern: {} (its fix above)", v.pattern->name);
  return fmt::format("pattern: {} — {}", v.pattern->name, v.pattern->fix);
}

std::string resultsText(const std::vector<CheckResult>& results, const std::string& indent, bool unknownReasons) {
  std::string out;
  std::set<std::string> told; // the anti-patterns whose fix was printed
  for (const auto& c : results) {
    for (const auto& v : c.violations) {
      out += indent + violationLine(v) + "\n";
      // Only a failing check's violations are classified (checkers/patterns/): elsewhere nothing was looked for.
      if (c.verdict != Verdict::Fail) continue;
      out += indent + "  " + patternLine(v, v.pattern && !told.insert(v.pattern->id).second) + "\n";
    }
    if (unknownReasons && c.verdict == Verdict::Unknown && !c.error.empty())
      out += indent + "unknown: " + c.checker + ": " + c.error + "\n";
    if (unknownReasons)
      for (const auto& n : c.notes) out += indent + "note: " + n + "\n";
  }
  return out;
}

void printResults(const Judged& j, const std::string& indent) { std::cout << resultsText(j.results, indent); }

} // namespace idem
