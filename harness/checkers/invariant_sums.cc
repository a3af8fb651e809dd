#include "checkers/checkers.h"
#include "checkers/diagnosis.h"
#include "scenario/scenario_parse.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>
#include <stdexcept>

namespace idem::detail {

namespace {

/// One key's rows of sum-of-distinct / count-of-distinct, and how to name what went wrong with it.
class KeyCheck {
public:
  KeyCheck(const Invariant& inv, const HistoryView& h, std::string key, std::vector<const Group*> groups)
      : inv_(inv), h_(h), key_(std::move(key)), groups_(std::move(groups)), sum_(inv.kind == "sum-of-distinct") {}

  int64_t amount(const Group& g) const {
    if (!sum_) return 1;
    auto it = g.fields.find(inv_.field);
    if (it == g.fields.end()) throw std::runtime_error(fmt::format("event {} has no field '{}'", g.events[0], inv_.field));
    auto v = parseInteger(it->second);
    if (!v) throw std::runtime_error(fmt::format("event {}: '{}' is not an integer", g.events[0], it->second));
    return *v;
  }

  /// Observed more than expected by `extra` (in the direction of sign): which events were applied again.
  void duplicate(Violation& v, int64_t extra, const std::string& numbers) const {
    v.kind = "duplicate";
    std::vector<Item> items;
    std::vector<const Group*> of;
    for (const Group* g : groups_) {
      int opp = 0;
      for (int n : g->events) opp += h_.opportunities(n);
      if (amount(*g) != 0 && opp >= 2) {
        items.push_back({amount(*g), opp - 1});
        of.push_back(g);
      }
    }
    Combinations c = findCombinations(items, extra);
    const std::vector<int>* pick = nullptr;
    if (c.complete && c.solutions.size() == 1) pick = &c.solutions[0];
    // A dying process's unfinished event is the likely one redelivered and applied again, but only when no
    // candidate was also retried by the producer: a consumer that deduplicates by entry id handles the
    // redelivery and applies the retry, so the kill would point at the wrong event.
    if (!pick && c.complete && c.solutions.size() > 1 && !anyRetried(c, of)) pick = onlyAtRisk(c, of, false);
    if (pick) return name(v, of, *pick, numbers);
    if (c.solutions.empty()) {
      if (items.empty()) {
        v.message = fmt::format("{}; no event of {} was delivered more than once, so redelivery does not explain it",
                                numbers, key_);
      } else {
        addCandidates(v, of);
        v.message = fmt::format("{}; no combination of extra applications of the redelivered {} adds up to {}{}",
                                numbers, candidates(v), extra, c.complete ? "" : " (search cut short)");
      }
      return;
    }
    ambiguous(v, of, c, "applied twice", numbers);
  }

  /// Observed less than expected by `missing`: which events were never applied.
  void lost(Violation& v, int64_t missing, const std::string& numbers) const {
    v.kind = "lost";
    std::vector<const Group*> forced, of;
    std::vector<Item> items;
    for (const Group* g : groups_) {
      bool never = true;
      for (int n : g->events) never = never && h_.neverDelivered(n);
      if (never) {
        forced.push_back(g);
        missing -= amount(*g);
      } else if (amount(*g) != 0) {
        items.push_back({amount(*g), 1});
        of.push_back(g);
      }
    }
    Combinations c = findCombinations(items, missing);
    const std::vector<int>* pick = nullptr;
    if (c.complete && c.solutions.size() == 1) pick = &c.solutions[0];
    if (!pick && c.complete && c.solutions.size() > 1) pick = onlyAtRisk(c, of, true);
    if (pick) {
      std::vector<int> x(forced.size(), 1);
      x.insert(x.end(), pick->begin(), pick->end());
      std::vector<const Group*> all = forced;
      all.insert(all.end(), of.begin(), of.end());
      return name(v, all, x, numbers, true);
    }
    for (const Group* g : forced) v.events.insert(v.events.end(), g->events.begin(), g->events.end());
    std::string prefix;
    if (!forced.empty()) prefix = fmt::format("{} not applied (never delivered); ", listNumbersOf(forced));
    if (missing < 0) {
      v.message = fmt::format("{}{}; that is more than the difference, so something else was applied extra", prefix,
                              numbers);
      return;
    }
    if (c.solutions.empty()) {
      addCandidates(v, of);
      v.message = fmt::format("{}{}; no set of events of {} adds up to the missing {}", prefix, numbers, key_, missing);
      return;
    }
    ambiguous(v, of, c, "lost", numbers);
    v.message = prefix + v.message;
  }

private:
  /// True when some group used by some solution was sent more than once by the producer.
  bool anyRetried(const Combinations& c, const std::vector<const Group*>& of) const {
    for (const auto& sol : c.solutions) {
      for (size_t i = 0; i < sol.size(); ++i) {
        if (!sol[i]) continue;
        for (int n : of[i]->events) {
          if (h_.sendsOf(n).size() > 1) return true;
        }
      }
    }
    return false;
  }

  /// Among several solutions, the only one whose every chosen group was being worked on by a process
  /// when it died (and, for lost events, `unacked`: or was never acknowledged); nullptr unless exactly one.
  const std::vector<int>* onlyAtRisk(const Combinations& c, const std::vector<const Group*>& of, bool unacked) const {
    std::set<int> risk = h_.inProgressAtDeath();
    for (const auto& [n, fields] : h_.eventFields) {
      if (unacked && !h_.acked(n)) risk.insert(n);
    }
    const std::vector<int>* found = nullptr;
    for (const auto& sol : c.solutions) {
      bool all = true;
      for (size_t i = 0; i < sol.size(); ++i) {
        if (!sol[i]) continue;
        bool any = false;
        for (int n : of[i]->events) any = any || risk.count(n);
        all = all && any;
      }
      if (!all) continue;
      if (found) return nullptr;
      found = &sol;
    }
    return found;
  }

  /// Names the groups with x[i] > 0: applied 1 + x[i] times, or (lost) not at all.
  void name(Violation& v, const std::vector<const Group*>& of, const std::vector<int>& x, const std::string& numbers,
            bool lost = false) const {
    std::vector<const Group*> named;
    std::vector<int> applied;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!x[i]) continue;
      named.push_back(of[i]);
      applied.push_back(lost ? 0 : 1 + x[i]);
    }
    nameGroups(v, inv_, h_, named, applied, numbers);
  }

  void ambiguous(Violation& v, const std::vector<const Group*>& of, const Combinations& c, const char* what,
                 const std::string& numbers) const {
    std::set<size_t> used;
    bool single = true;
    for (const auto& sol : c.solutions) {
      int chosen = 0;
      for (size_t i = 0; i < sol.size(); ++i) {
        if (sol[i]) used.insert(i), chosen += sol[i];
      }
      single = single && chosen == 1;
    }
    std::vector<const Group*> cands;
    for (size_t i : used) cands.push_back(of[i]);
    addCandidates(v, cands);
    const char* tell = sum_ ? "amounts do not tell which" : "the count does not tell which";
    if (single)
      v.message = fmt::format("one of {} {}; {}; {}", candidates(v), what, tell, numbers);
    else
      v.message = fmt::format("{}{} combinations of {} explain it; {}; {}", c.complete ? "" : "at least ",
                              c.solutions.size(), candidates(v), tell, numbers);
  }

  void addCandidates(Violation& v, const std::vector<const Group*>& gs) const {
    for (const Group* g : gs) {
      for (int n : g->events) {
        v.candidates.push_back(n);
        cite(v, eventStory(h_, n, v.kind == "lost"));
      }
    }
    v.kill_point.clear(); // not decided: no kill point is named
  }

  std::string candidates(const Violation& v) const {
    std::vector<int> c = v.candidates;
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    return fmt::format("event{} {}", c.size() == 1 ? "" : "s", fmt::join(c, ", "));
  }

  std::string listNumbersOf(const std::vector<const Group*>& gs) const {
    std::vector<int> ns;
    for (const Group* g : gs) ns.insert(ns.end(), g->events.begin(), g->events.end());
    return fmt::format("event{} {}", ns.size() == 1 ? "" : "s", listNumbers(ns));
  }

  const Invariant& inv_;
  const HistoryView& h_;
  std::string key_;
  std::vector<const Group*> groups_;
  bool sum_;
};

/// key -> value column, from rows (key, value).
std::map<std::string, Row> keyed(const Rows& rows, const Invariant& inv, const char* which) {
  std::map<std::string, Row> out;
  for (const auto& row : rows) {
    std::string key = rowKey(row, inv.name);
    if (row.size() < 2)
      throw std::runtime_error(fmt::format("'{}': the {} row of key '{}' has no value column", inv.name, which, key));
    if (!out.emplace(key, row).second)
      throw std::runtime_error(fmt::format("'{}': key '{}' appears twice in the {} rows", inv.name, key, which));
  }
  return out;
}

int64_t number(const Row& row, const char* which) {
  if (!row[1]) throw std::runtime_error(fmt::format("the {} value of '{}' is NULL", which, *row[0]));
  auto v = parseInteger(*row[1]);
  if (!v) throw std::runtime_error(fmt::format("the {} value of '{}' is '{}', not an integer", which, *row[0], *row[1]));
  return *v;
}

} // namespace

CheckResult checkSums(const Invariant& inv, const HistoryView& h) {
  auto init = keyed(observedRows(h.requireInitial(), inv.name), inv, "initial");
  auto fin = keyed(observedRows(h.requireFinal(), inv.name), inv, "final");
  std::vector<Group> groups = distinctGroups(h, inv.distinct);
  std::map<std::string, std::vector<const Group*>> byKey;
  for (const auto& g : groups) {
    auto it = g.fields.find(inv.key);
    if (it == g.fields.end()) throw std::runtime_error(fmt::format("event {} has no field '{}'", g.events[0], inv.key));
    byKey[it->second].push_back(&g);
  }
  std::set<std::string> keys;
  for (const auto* m : {&init, &fin}) {
    for (const auto& [k, row] : *m) keys.insert(k);
  }
  for (const auto& [k, gs] : byKey) keys.insert(k);
  std::vector<Violation> out;
  std::vector<std::string> unknown;
  for (const auto& key : keys) {
    try {
      Violation v;
      v.invariant = inv.name;
      v.key = key;
      bool hasInit = init.count(key), hasFin = fin.count(key);
      if (!byKey.count(key)) { // nothing sent for this key: it must keep its initial row
        if (hasInit && hasFin && number(init[key], "initial") == number(fin[key], "final")) continue;
        v.kind = "phantom";
        if (hasInit) v.expected = number(init[key], "initial");
        if (hasFin) v.observed = number(fin[key], "final");
        v.message = !hasInit ? fmt::format("{} of {} is {} but {} had no initial row and no event", inv.name, key,
                                           v.observed.dump(), key)
                    : !hasFin ? fmt::format("{} of {} disappeared although no event was sent for {}", inv.name, key, key)
                              : fmt::format("{} of {} is {}, expected its initial {}: no event was sent for {}", inv.name,
                                            key, v.observed.dump(), v.expected.dump(), key);
        out.push_back(std::move(v));
        continue;
      }
      KeyCheck kc(inv, h, key, byKey[key]);
      int64_t expected = hasInit ? number(init[key], "initial") : 0;
      for (const Group* g : byKey[key]) expected += inv.sign * kc.amount(*g);
      v.expected = expected;
      if (!hasFin) {
        v.kind = "lost";
        for (const Group* g : byKey[key]) v.candidates.insert(v.candidates.end(), g->events.begin(), g->events.end());
        v.message = fmt::format("{} of {} has no row; expected {}", inv.name, key, expected);
        out.push_back(std::move(v));
        continue;
      }
      int64_t observed = number(fin[key], "final");
      if (observed == expected) continue;
      v.observed = observed;
      std::string numbers = fmt::format("{} of {} is {}, expected {}", inv.name, key, observed, expected);
      int64_t extra = inv.sign * (observed - expected);
      if (extra > 0) kc.duplicate(v, extra, numbers);
      else kc.lost(v, -extra, numbers);
      out.push_back(std::move(v));
    } catch (const std::exception& e) {
      unknown.push_back(fmt::format("key {}: {}", key, e.what()));
    }
  }
  return resultOf(std::move(out), unknown);
}

} // namespace idem::detail
