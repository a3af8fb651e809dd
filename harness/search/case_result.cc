#include "search/case_result.h"

#include <algorithm>

namespace idem {

CaseResult classify(const Schedule& s, const std::vector<Op>& history, const std::vector<CheckResult>& results,
                 const std::string& error) {
  CaseResult o;
  o.planned = s.faults;
  o.processes = std::max(s.consumers, s.replicas);
  for (const auto& [op, f] : recordsOf<ops::FaultOp>(history)) {
    const Fault& p = f->fault;
    if (std::find(o.planned.begin(), o.planned.end(), p) != o.planned.end() &&
        std::find(o.fired.begin(), o.fired.end(), p) == o.fired.end())
      o.fired.push_back(p);
  }
  if (!error.empty()) {
    o.verdict = Verdict::Error;
    o.reason = error;
    return o;
  }
  bool unknown = results.empty();
  if (unknown) o.reason = "no checker ran";
  for (const auto& r : results) {
    if (r.verdict == Verdict::Fail) {
      o.verdict = Verdict::Fail;
      for (const auto& v : r.violations) o.kinds.insert(v.kind);
    } else if (r.verdict == Verdict::Unknown && r.checker != "faults") {
      unknown = true;
      if (o.reason.empty()) o.reason = r.checker + ": " + r.error;
    }
  }
  if (o.verdict == Verdict::Fail) {
    o.reason.clear();
    return o;
  }
  o.verdict = unknown ? Verdict::Unknown : Verdict::Pass;
  return o;
}

bool sameFailure(const CaseResult& o, const std::set<std::string>& kinds) {
  if (o.verdict != Verdict::Fail) return false;
  if (kinds.empty()) return true;
  return std::any_of(o.kinds.begin(), o.kinds.end(), [&](const std::string& k) { return kinds.count(k) > 0; });
}

bool failedAlikeOtherwise(const std::vector<CaseResult>& runs, const std::set<std::string>& kinds) {
  if (runs.empty() || runs.front().verdict != Verdict::Fail || runs.front().kinds.empty()) return false;
  return std::all_of(runs.begin(), runs.end(), [&](const CaseResult& o) {
    return sameFailure(o, runs.front().kinds) && !sameFailure(o, kinds);
  });
}

namespace {

std::vector<std::string> splitSpaces(const std::string& s) {
  std::vector<std::string> out;
  for (size_t pos = 0; pos < s.size();) {
    size_t end = s.find(' ', pos);
    if (end == std::string::npos) end = s.size();
    if (end > pos) out.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

std::string joinSpaces(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

} // namespace

RunSummary RunSummary::of(size_t index, const CaseResult& o) {
  RunSummary r;
  r.run = static_cast<uint32_t>(index + 1);
  r.verdict = o.verdict;
  r.processes = static_cast<uint8_t>(std::clamp(o.processes, 1, 255));
  std::vector<std::string> planned;
  for (size_t p = 0; p < o.planned.size(); ++p) {
    planned.push_back(o.planned[p].str());
    if (std::find(o.fired.begin(), o.fired.end(), o.planned[p]) != o.fired.end()) r.firedMask |= uint64_t(1) << std::min<size_t>(p, 63);
  }
  r.planned = joinSpaces(planned);
  r.kinds = joinSpaces({o.kinds.begin(), o.kinds.end()});
  r.reason = o.reason;
  return r;
}

std::vector<std::string> RunSummary::plannedFaults() const { return splitSpaces(planned); }

std::vector<std::string> RunSummary::firedFaults() const {
  std::vector<std::string> out, all = plannedFaults();
  for (size_t p = 0; p < all.size(); ++p)
    if (firedMask & (uint64_t(1) << std::min<size_t>(p, 63))) out.push_back(all[p]);
  return out;
}

nlohmann::json RunSummary::toJson() const {
  nlohmann::json j = {{"run", run}, {"verdict", toString(verdict)}, {"planned", plannedFaults()}, {"fired", firedFaults()}};
  if (processes > 1) j["processes"] = processes;
  if (!kinds.empty()) j["kinds"] = splitSpaces(kinds);
  if (!reason.empty()) j["reason"] = reason;
  return j;
}

} // namespace idem
