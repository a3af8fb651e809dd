/// sum-of-distinct and count-of-distinct. Per key, every distinct group of events moves the observed value
/// by its amount each time it is applied (count: by 1). The observation proves "every group exactly once"
/// only when no other application counts within the bounds of the history (each group at most as often as
/// it was delivered: HistoryView::cap) give the same value. Otherwise the key is unknown (ambiguous), never
/// valid; and a key whose value differs is named by its one explanation, or by its candidates.
#include "checkers/detail.h"
#include "checkers/diagnosis.h"
#include "checkers/multiplicity.h"
#include "scenario/scenario_parse.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>
#include <stdexcept>

namespace idem::detail {

namespace {

/// key -> value column, from rows (key, value).
std::map<std::string, Row> keyed(const Rows& rows, const Invariant& inv, const char* which) {
  std::map<std::string, Row> out;
  for (const auto& row : rows) {
    std::string key = rowKey(row, inv.name);
    if (row.size() != 2)
      throw std::runtime_error(fmt::format("'{}': the {} row of key '{}' has {} columns, expected 2 (key, value)",
                                           inv.name, which, key, row.size()));
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

/// One key of the invariant: its groups, and the judgement of its observed value.
class KeyCheck {
public:
  KeyCheck(const Invariant& inv, const HistoryView& h, std::string key, std::vector<const Group*> groups)
      : inv_(inv), h_(h), key_(std::move(key)), groups_(std::move(groups)), sum_(inv.kind == "sum-of-distinct") {
    for (const Group* g : groups_) {
      int cap = 0, late = 0;
      for (int n : g->events) {
        cap += h_.cap(n);
        late += h_.lateRetries(n).after;
      }
      units_.push_back(Unit{inv_.sign * amount(*g), 0, cap});
      lateAllowed_.push_back(late);
    }
  }

  int64_t expected(int64_t initial) const {
    int64_t e = initial;
    for (const Unit& u : units_) e += u.amount;
    return e;
  }

  /// Judges the final value; appends violations, or a reason why the key is unknown.
  void judge(int64_t initial, int64_t observed, std::vector<Violation>& out, std::vector<std::string>& unknown) const {
    const int64_t want = expected(initial);
    numbers_ = fmt::format("{} of {} is {}, expected {}", inv_.name, key_, observed, want);
    const Explanations ex = explain(units_, observed - initial);
    bool onesFit = std::all_of(units_.begin(), units_.end(), [](const Unit& u) { return u.hi >= 1; });
    if (onesFit && observed == want) { // what a correct consumer gives: is it the only explanation?
      if (ex.complete && ex.solutions.size() == 1) return;
      if (!ex.complete && ex.solutions.size() <= 1) {
        unknown.push_back(fmt::format("{} as expected, but whether another combination of applications gives the "
                                      "same value could not be decided (search cut short)", numbers_));
        return;
      }
      const auto& other = ex.solutions[0] == std::vector<int>(units_.size(), 1) ? ex.solutions[1] : ex.solutions[0];
      unknown.push_back(fmt::format("{} of {} is {} as expected, but {} gives the same value: {}{}{} (docs/verdicts.md)",
                                    inv_.name, key_, observed, phrase(other), tell(), heldClause(other),
                                    unseenClause()));
      return;
    }
    // The value is not "every group once". A retry past the producer's retry window may be applied again:
    // when the one explanation applies only such events more than once, the value is right.
    if (ex.complete && ex.solutions.size() == 1 && onesFit && excusedByWindow(ex.solutions[0])) return;
    if (h_.end() == RunEnd::Limit && !excessProven(ex)) {
      unknown.push_back(fmt::format("{}, but the run did not finish ({}): what is missing may still have come",
                                    numbers_, h_.endReason()));
      return;
    }
    if (ex.complete && ex.solutions.size() == 1) return named(ex.solutions[0], out);
    Violation v = base(observed - want);
    if (ex.solutions.empty()) {
      for (const Group* g : groups_) addCandidate(v, *g);
      v.message = ex.complete
                      ? fmt::format("{}; no count of applications of the events of {} (each at most as often as it was "
                                    "delivered) adds up to it: something was applied {} often than delivered, or an "
                                    "effect no event explains", numbers_, key_, v.kind == "duplicate" ? "more" : "less")
                      : fmt::format("{}; no explanation was found before the search was cut short", numbers_);
      out.push_back(std::move(v));
      return;
    }
    // Several explanations: the simplest (fewest events off) name the candidates; none is claimed.
    const int simplest = deviations(ex.solutions.front());
    bool allExcess = true, allMissing = true;
    for (const auto& sol : ex.solutions) {
      for (int x : sol) {
        if (x > 1) allMissing = false;
        if (x < 1) allExcess = false;
      }
      if (deviations(sol) != simplest) continue;
      for (size_t i = 0; i < sol.size(); ++i)
        if (sol[i] != 1) addCandidate(v, *groups_[i]);
    }
    if (allExcess) v.kind = "duplicate";
    else if (allMissing) v.kind = "lost";
    std::vector<std::string> alts;
    for (size_t i = 0; i < ex.solutions.size() && i < 3; ++i) alts.push_back(phrase(ex.solutions[i]));
    std::string more;
    if (ex.solutions.size() > alts.size()) more = fmt::format(" and {} more", ex.solutions.size() - alts.size());
    if (!ex.complete) more += " (the search was cut short: there may be others)";
    std::string likely;
    if (const auto* l = likeliest(ex)) likely = fmt::format("likely {}, which the process that died was working on; ", phrase(*l));
    v.message = fmt::format("{}{}{} explanations: {}{}; {}; {}", likely, ex.complete ? "" : "at least ",
                            ex.solutions.size(), fmt::join(alts, "; or "), more, tell(), numbers_);
    out.push_back(std::move(v));
  }

private:
  int64_t amount(const Group& g) const {
    if (!sum_) return 1;
    auto it = g.fields.find(inv_.field);
    if (it == g.fields.end()) throw std::runtime_error(fmt::format("event {} has no field '{}'", g.events[0], inv_.field));
    auto v = parseInteger(it->second);
    if (!v) throw std::runtime_error(fmt::format("event {}: '{}' is not an integer", g.events[0], it->second));
    return *v;
  }

  /// Every group once, except groups applied again only by retries past the retry window.
  bool excusedByWindow(const std::vector<int>& m) const {
    bool any = false;
    for (size_t i = 0; i < m.size(); ++i) {
      if (m[i] == 1) continue;
      if (m[i] < 1 || m[i] > 1 + lateAllowed_[i]) return false;
      any = true;
    }
    return any;
  }

  /// The groups applied again although every retry of theirs after an `age` came within the retry window,
  /// and that ageing removed dedup state: the retention is shorter than the window.
  bool inWindow(const Group& g) const {
    return std::all_of(g.events.begin(), g.events.end(), [&](int n) {
      const auto late = h_.lateRetries(n);
      return late.within > 0 && late.after == 0 && late.removed;
    });
  }

  /// "; its retry was sent after 0 ms of simulated time, within the producer's retry window of 60000 ms, and
  /// applied again once its dedup state had aged 60000 ms (2 keys expired, 0 rows pruned): …"
  std::string windowClause(const std::vector<const Group*>& gs, Violation& v) const {
    int64_t aged = 0, sentAt = 0, expired = 0, pruned = 0;
    std::set<int64_t> seen;
    for (const Group* g : gs)
      for (int n : g->events) {
        const auto late = h_.lateRetries(n);
        aged = std::max(aged, late.ageMs);
        sentAt = std::max(sentAt, late.sentAtMs);
        for (int64_t op : late.ops) {
          v.ops.push_back(op);
          seen.insert(op);
        }
      }
    for (const auto& a : h_.ages)
      if (seen.count(a.op)) expired += a.aged.expired, pruned += a.aged.pruned;
    const auto& window = h_.scenario.retryWindowMs;
    return fmt::format("; the retry was sent {} ms of simulated time after it, {}, and applied again once its dedup "
                       "state had aged {} ms ({} key{} expired, {} row{} pruned): the consumer's retention is shorter "
                       "than the retry window",
                       sentAt, window ? fmt::format("within the producer's retry window of {} ms", *window)
                                      : std::string("and the scenario declares no retry window (every retry counts)"),
                       aged, expired, expired == 1 ? "" : "s", pruned, pruned == 1 ? "" : "s");
  }

  /// "; event 2 was delivered again (XREADGROUP#5 to c2) while c1 held it unacknowledged, CLAIM_IDLE_MS
  /// (20 ms) after: …" — when the broker's redelivery timeout gave the deliveries that `m` applies more than
  /// once, a larger --claim-idle-ms removes them. "" otherwise.
  std::string heldClause(const std::vector<int>& m) const {
    if (!h_.plan || !h_.plan->claimIdleRedelivers) return "";
    std::vector<std::string> parts;
    for (size_t i = 0; i < m.size(); ++i) {
      if (m[i] <= 1) continue;
      std::vector<std::string> steps, holders;
      for (int n : groups_[i]->events)
        for (const auto& r : h_.redeliveredWhileHeld(n)) {
          steps.push_back(fmt::format("{} to {}", r.again->label, r.again->process));
          if (std::find(holders.begin(), holders.end(), r.holder) == holders.end()) holders.push_back(r.holder);
        }
      if (!steps.empty())
        parts.push_back(fmt::format("{} was delivered again ({}) while {} held it unacknowledged",
                                    groupLabel(inv_, h_, *groups_[i]), listAnd(steps), listAnd(holders)));
    }
    if (parts.empty()) return "";
    return fmt::format("; {}, its CLAIM_IDLE_MS ({} ms) over: give --claim-idle-ms above the time the consumer "
                       "holds an entry (or works through a batch) to leave fewer deliveries to tell apart",
                       listAnd(parts), h_.plan->claimIdleMs);
  }

  const char* tell() const { return sum_ ? "the amounts cannot tell" : "a count cannot tell"; }
  /// Why each event may have been applied that often: steps that may have delivered entries unseen.
  std::string unseenClause() const {
    if (h_.unseenReads == 0) return "";
    return fmt::format("; {} script call{} on the stream's server (EVAL, EVALSHA, FCALL) returned what looks like an "
                       "entry id and may each have delivered an entry unseen, so each event may have been applied that "
                       "much more often (docs/target-contract.md)",
                       h_.unseenReads, h_.unseenReads == 1 ? "" : "s");
  }

  /// At a limit, only an effect more time cannot undo is proven: every explanation applies something twice.
  static bool excessProven(const Explanations& ex) {
    if (!ex.complete || ex.solutions.empty()) return false;
    return std::all_of(ex.solutions.begin(), ex.solutions.end(), [](const std::vector<int>& m) {
      return std::any_of(m.begin(), m.end(), [](int x) { return x > 1; });
    });
  }

  /// The one explanation whose every group off was at risk: being worked on by a process when it died (or,
  /// for a group missing, never acknowledged); nullptr unless exactly one. An extra application is not
  /// pinned on a dying process when a producer retry could explain it as well. A hint, never a claim.
  const std::vector<int>* likeliest(const Explanations& ex) const {
    std::set<int> risk = h_.inProgressAtDeath();
    auto retried = [&](const Group& g) {
      return std::any_of(g.events.begin(), g.events.end(), [&](int n) { return h_.sendsOf(n).size() > 1; });
    };
    // A consumer that deduplicates by entry id skips a redelivery and applies a producer retry: when a
    // retry explains an extra application as well, the dying process is no better a suspect.
    for (const auto& sol : ex.solutions) {
      bool byRetry = true;
      for (size_t i = 0; i < sol.size() && byRetry; ++i)
        if (sol[i] != 1) byRetry = sol[i] > 1 && retried(*groups_[i]);
      if (byRetry) return nullptr;
    }
    const std::vector<int>* found = nullptr;
    for (const auto& sol : ex.solutions) {
      bool all = true;
      for (size_t i = 0; i < sol.size() && all; ++i) {
        if (sol[i] == 1) continue;
        const Group& g = *groups_[i];
        all = std::any_of(g.events.begin(), g.events.end(),
                          [&](int n) { return risk.count(n) || (sol[i] < 1 && !h_.acked(n)); });
      }
      if (!all) continue;
      if (found) return nullptr;
      found = &sol;
    }
    return found;
  }

  bool acked(const Group& g) const {
    return std::any_of(g.events.begin(), g.events.end(), [&](int n) { return h_.acked(n); });
  }

  /// "event 2 applied twice and event 4 lost"
  std::string phrase(const std::vector<int>& m) const {
    std::vector<std::string> parts;
    for (size_t i = 0; i < m.size(); ++i) {
      if (m[i] == 1) continue;
      const Group& g = *groups_[i];
      parts.push_back(groupLabel(inv_, h_, g) +
                      (m[i] > 1 ? " applied " + times(m[i]) : acked(g) ? " lost" : " not applied"));
    }
    return listAnd(parts);
  }

  Violation base(int64_t diff) const {
    Violation v;
    v.invariant = inv_.name;
    v.key = key_;
    v.kind = diff * inv_.sign > 0 ? "duplicate" : "lost";
    return v;
  }

  void addCandidate(Violation& v, const Group& g) const {
    for (int n : g.events) {
      v.candidates.push_back(n);
      cite(v, eventStory(h_, n, v.kind == "lost"));
    }
    v.kill_point.clear(); // not decided: no kill point is named
  }

  /// The one explanation: a violation per kind of deviation (applied more than once, lost, not applied).
  void named(const std::vector<int>& m, std::vector<Violation>& out) const {
    std::map<std::string, std::pair<std::vector<const Group*>, std::vector<int>>> byKind;
    for (size_t i = 0; i < m.size(); ++i) {
      if (m[i] == 1) continue;
      std::string kind = m[i] > 1 ? (inWindow(*groups_[i]) ? "dedup-window" : "duplicate")
                                  : acked(*groups_[i]) ? "lost" : "stuck";
      byKind[kind].first.push_back(groups_[i]);
      byKind[kind].second.push_back(m[i]);
    }
    std::string numbers = numbers_;
    if (byKind.size() > 1) numbers += fmt::format(", explained only by {}", phrase(m));
    for (const char* kind : {"dedup-window", "duplicate", "lost", "stuck"}) {
      auto it = byKind.find(kind);
      if (it == byKind.end()) continue;
      Violation v = base(0);
      v.kind = kind;
      nameGroups(v, inv_, h_, it->second.first, it->second.second, numbers);
      if (v.kind == "dedup-window") v.message += windowClause(it->second.first, v);
      out.push_back(std::move(v));
    }
  }

  const Invariant& inv_;
  const HistoryView& h_;
  std::string key_;
  std::vector<const Group*> groups_;
  std::vector<Unit> units_;
  std::vector<int> lateAllowed_; ///< per group: applications more than once a late retry (past the window) allows
  bool sum_;
  mutable std::string numbers_;
};

} // namespace

CheckResult checkSums(const Invariant& inv, const HistoryView& h) {
  auto init = keyed(observedRows(h.requireInitial().observed, inv.name, "initial"), inv, "initial");
  auto fin = keyed(observedRows(h.requireFinal().observed, inv.name, "final"), inv, "final");
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
  const bool limit = h.end() == RunEnd::Limit;
  std::vector<Violation> out;
  std::vector<std::string> unknown;
  for (const auto& key : keys) {
    try {
      bool hasInit = init.count(key), hasFin = fin.count(key);
      if (!byKey.count(key)) { // nothing sent for this key: it must keep its initial row
        if (hasInit && hasFin && number(init[key], "initial") == number(fin[key], "final")) continue;
        Violation v;
        v.kind = "phantom";
        v.invariant = inv.name;
        v.key = key;
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
      int64_t initial = hasInit ? number(init[key], "initial") : 0;
      int64_t expected = kc.expected(initial);
      if (!hasFin) {
        if (limit) {
          unknown.push_back(fmt::format("{} of {} has no row yet; the run did not finish ({})", inv.name, key,
                                        h.endReason()));
          continue;
        }
        Violation v;
        v.kind = "lost";
        v.invariant = inv.name;
        v.key = key;
        v.expected = expected;
        for (const Group* g : byKey[key]) v.candidates.insert(v.candidates.end(), g->events.begin(), g->events.end());
        v.message = fmt::format("{} of {} has no row; expected {}", inv.name, key, expected);
        out.push_back(std::move(v));
        continue;
      }
      int64_t observed = number(fin[key], "final");
      size_t before = out.size();
      kc.judge(initial, observed, out, unknown);
      for (size_t i = before; i < out.size(); ++i) {
        out[i].expected = expected;
        out[i].observed = observed;
      }
    } catch (const std::exception& e) {
      unknown.push_back(fmt::format("key {}: {}", key, e.what()));
    }
  }
  return resultOf(std::move(out), unknown);
}

} // namespace idem::detail
