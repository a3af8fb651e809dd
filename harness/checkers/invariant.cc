#include "checkers/detail.h"
#include "checkers/diagnosis.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

namespace idem::detail {

CheckResult checkInvariant(const Scenario& s, const Invariant& inv, const HistoryView& h) {
  if (inv.kind == "sum-of-distinct" || inv.kind == "count-of-distinct") return checkSums(inv, h);
  if (inv.kind == "latest-version") return checkLatestVersion(inv, h);
  if (inv.kind == "final-value") return checkFinalValue(inv, h);
  if (inv.kind == "one-row-per-event") return checkOneRowPerEvent(inv, h);
  throw std::runtime_error(fmt::format("invariant '{}': unknown kind '{}'", inv.name, inv.kind));
}

CheckResult resultOf(std::vector<Violation> violations, const std::vector<std::string>& unknownReasons) {
  CheckResult r;
  for (auto& v : violations) tidy(v);
  r.violations = std::move(violations);
  r.error = fmt::format("{}", fmt::join(unknownReasons, "; "));
  if (!r.violations.empty()) r.verdict = Verdict::Fail;
  else if (!unknownReasons.empty()) r.verdict = Verdict::Unknown;
  else r.verdict = Verdict::Pass;
  return r;
}

std::string groupLabel(const Invariant& inv, const HistoryView& h, const Group& g) {
  if (inv.distinct == h.scenario.idField()) return fmt::format("event {}", g.events.front());
  return fmt::format("{} {} (event{} {})", inv.distinct, g.value, g.events.size() > 1 ? "s" : "",
                     listNumbers(g.events));
}

void nameGroups(Violation& v, const Invariant& inv, const HistoryView& h, const std::vector<const Group*>& groups,
                const std::vector<int>& applied, const std::string& numbers) {
  std::vector<std::pair<const Group*, int>> named; // in event order
  for (size_t i = 0; i < groups.size(); ++i) named.emplace_back(groups[i], applied[i]);
  std::sort(named.begin(), named.end(), [](const auto& a, const auto& b) { return a.first->events < b.first->events; });
  // "applied twice", "lost" (acknowledged without effect), "not applied" (never acknowledged: stuck)
  auto what = [&](const Group& g, int k) {
    if (k > 0) return " applied " + times(k);
    bool acked = std::any_of(g.events.begin(), g.events.end(), [&](int n) { return h.acked(n); });
    return std::string(acked ? " lost" : " not applied");
  };
  std::vector<std::string> suffixes;
  for (const auto& [g, k] : named) suffixes.push_back(what(*g, k));
  bool same = std::all_of(suffixes.begin(), suffixes.end(), [&](const std::string& x) { return x == suffixes.front(); });
  if (same && suffixes.front() == " not applied") v.kind = "stuck";
  std::vector<std::string> phrases, stories;
  size_t eventsNamed = 0;
  for (const Group* g : groups) eventsNamed += g->events.size();
  if (same && named.size() > 1 && inv.distinct == h.scenario.idField()) { // "events 2 and 4 applied twice"
    std::vector<int> ns;
    for (const auto& [g, k] : named) ns.push_back(g->events.front());
    phrases.push_back("events " + listNumbers(ns) + suffixes.front());
  } else {
    for (size_t i = 0; i < named.size(); ++i) phrases.push_back(groupLabel(inv, h, *named[i].first) + suffixes[i]);
  }
  for (const auto& [g, k] : named) {
    for (int n : g->events) {
      v.events.push_back(n);
      Story st = eventStory(h, n, k == 0);
      cite(v, st);
      stories.push_back(eventsNamed == 1 ? st.text : fmt::format("event {} {}", n, st.text));
    }
  }
  v.message = fmt::format("{}: {}; {}", listAnd(phrases), fmt::join(stories, "; "), numbers);
}

} // namespace idem::detail
