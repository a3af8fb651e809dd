#include "checkers/checkers.h"

#include "checkers/detail.h"
#include "checkers/http.h"

#include <fmt/format.h>

#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>

namespace idem {

namespace {

/// Runs one checker; anything it throws makes its result Unknown with the reason, never Valid.
CheckResult guarded(const std::string& name, const std::function<CheckResult()>& fn) {
  try {
    CheckResult r = fn();
    r.checker = name;
    return r;
  } catch (const std::exception& e) {
    CheckResult r;
    r.checker = name;
    r.verdict = Verdict::Unknown;
    r.error = fmt::format("checker failed: {}", e.what());
    return r;
  } catch (...) {
    CheckResult r;
    r.checker = name;
    r.verdict = Verdict::Unknown;
    r.error = "checker failed with an unknown exception";
    return r;
  }
}

} // namespace

void to_json(nlohmann::json& j, const Pattern& p) {
  j = nlohmann::json{{"id", p.id}, {"name", p.name}, {"ops", p.ops}, {"explanation", p.explanation}, {"fix", p.fix}};
}

void to_json(nlohmann::json& j, const Violation& v) {
  j = nlohmann::json{{"kind", v.kind},         {"invariant", v.invariant}, {"key", v.key},
                     {"expected", v.expected}, {"observed", v.observed},   {"events", v.events},
                     {"candidates", v.candidates}, {"entries", v.entries}, {"kill_point", v.kill_point},
                     {"message", v.message},   {"ops", v.ops}};
  if (v.pattern) j["pattern"] = *v.pattern;
}

void to_json(nlohmann::json& j, const CheckResult& r) {
  j = nlohmann::json{{"checker", r.checker}, {"verdict", toString(r.verdict)}, {"violations", r.violations},
                     {"error", r.error}};
  if (!r.notes.empty()) j["notes"] = r.notes;
}

Verdict merge(const std::vector<CheckResult>& results) {
  bool unknown = false;
  for (const auto& r : results) {
    if (r.verdict == Verdict::Fail) return Verdict::Fail;
    if (r.verdict == Verdict::Unknown) unknown = true;
  }
  return unknown ? Verdict::Unknown : Verdict::Pass;
}

std::vector<CheckResult> checkAll(const Scenario& s, const std::vector<Op>& history) {
  std::vector<CheckResult> out;
  std::shared_ptr<const detail::HistoryView> view;
  std::string viewError;
  try {
    view = std::make_shared<const detail::HistoryView>(s, history);
  } catch (const std::exception& e) {
    viewError = e.what();
  }
  auto withView = [&](const std::function<CheckResult(const detail::HistoryView&)>& fn) {
    return [&, fn]() -> CheckResult {
      if (!view) throw std::runtime_error(fmt::format("malformed history: {}", viewError));
      return fn(*view);
    };
  };
  if (s.http) { // an Idempotency-Key endpoint: its invariants instead of the stream's and the broker's
    std::vector<std::pair<std::string, std::function<CheckResult()>>> checks;
    try {
      checks = detail::httpCheckers(s, history);
    } catch (const std::exception& e) {
      std::string why = e.what();
      checks.emplace_back("http", [why]() -> CheckResult { throw std::runtime_error(why); });
    }
    for (const auto& [name, fn] : checks) out.push_back(guarded(name, fn));
  }
  for (const auto& inv : s.invariants) {
    out.push_back(guarded("invariant:" + inv.name,
                          withView([&](const detail::HistoryView& h) { return detail::checkInvariant(s, inv, h); })));
  }
  if (s.poison) {
    const std::vector<CheckResult> invariants = out;
    out.push_back(guarded("poison:dead-lettered",
                          withView([](const detail::HistoryView& h) { return detail::checkPoisonDeadLettered(h); })));
    out.push_back(guarded("poison:bounded",
                          withView([](const detail::HistoryView& h) { return detail::checkPoisonBounded(h); })));
    out.push_back(guarded("poison:no-block", withView([invariants](const detail::HistoryView& h) {
                            return detail::checkPoisonNoBlock(h, invariants);
                          })));
    out.push_back(guarded("poison:not-applied",
                          withView([](const detail::HistoryView& h) { return detail::checkPoisonNotApplied(h); })));
  }
  if (s.sink) {
    out.push_back(guarded("sink:exactly-once",
                          withView([](const detail::HistoryView& h) { return detail::checkSinkExactlyOnce(h); })));
    out.push_back(guarded("sink:agreement",
                          withView([](const detail::HistoryView& h) { return detail::checkSinkAgreement(h); })));
    // Keys are the consumer's promise only to a provider that honours them: not judged under "ignore".
    if (detail::sinkPolicyOf(s, history) == "honour")
      out.push_back(guarded("sink:key-stable",
                            withView([](const detail::HistoryView& h) { return detail::checkSinkKeyStable(h); })));
  }
  if (!s.http) out.push_back(guarded("broker", withView([](const detail::HistoryView& h) { return detail::checkBroker(h); })));
  out.push_back(guarded("process", withView([](const detail::HistoryView& h) { return detail::checkProcesses(h); })));
  out.push_back(guarded("faults", withView([](const detail::HistoryView& h) { return detail::checkFaults(h); })));
  out.push_back(guarded("run", [&]() { return detail::checkRun(history); }));
  out.push_back(guarded("observation",
                        withView([](const detail::HistoryView& h) { return detail::checkObservation(h); })));
  classifyViolations(s, history, out);
  return out;
}

} // namespace idem
