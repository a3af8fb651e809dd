/// The checkers of poison events (docs/verdicts.md, "Poison events"): events a consumer can never apply,
/// which the scenario says must end in its dead letter, delivered at most max_deliveries times, without
/// holding up the other events and without any effect. Like every checker they read only the history: the
/// harness read the dead-letter destination at the end (the final op's dead_letter).
#include "checkers/detail.h"

#include "scenario/scenario_parse.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>
#include <stdexcept>

namespace idem::detail {

namespace {

/// The poison events of the history: event number -> its event id, in event order.
std::map<int, std::string> poisonEvents(const HistoryView& h) {
  std::map<int, std::string> out;
  for (const auto& s : h.sends)
    if (h.scenario.isPoison(s.fields)) out.emplace(s.n, s.event_id);
  return out;
}

std::vector<int64_t> sendOps(const HistoryView& h, int n) {
  std::vector<int64_t> ops;
  for (const SendRec* s : h.sendsOf(n)) ops.push_back(s->op);
  return ops;
}

int64_t integerOf(const std::optional<std::string>& v, const std::string& what) {
  auto x = v ? parseInteger(*v) : std::nullopt;
  if (!x) throw std::runtime_error(fmt::format("{} is not an integer", what));
  return *x;
}

/// "once", "twice", "3 times"
std::string timesText(int64_t k) { return k == 1 ? "once" : k == 2 ? "twice" : fmt::format("{} times", k); }

} // namespace

CheckResult checkPoisonDeadLettered(const HistoryView& h) {
  const auto& fin = h.requireFinal();
  if (fin.deadLetterWhere.empty())
    return resultOf({}, {"the final op has no read of the dead-letter destination"});
  const auto poison = poisonEvents(h);
  std::map<std::string, int> eventOfId;
  for (const auto& [n, id] : poison) eventOfId[id] = n;
  std::map<std::string, std::vector<std::string>> lettersOf; // event id -> dead letters
  std::vector<Violation> out;
  std::vector<std::string> unknown;
  for (const auto& d : fin.deadLetters) {
    if (d.eventId && eventOfId.count(*d.eventId)) {
      lettersOf[*d.eventId].push_back(d.id);
      continue;
    }
    Violation v;
    v.kind = "dead-letter-unknown";
    v.invariant = "poison:dead-lettered";
    v.entries = {d.id};
    v.observed = {{"dead_letter", d.id}, {"event_id", d.eventId ? nlohmann::json(*d.eventId) : nlohmann::json()}};
    auto n = h.sends.end();
    for (auto it = h.sends.begin(); d.eventId && it != h.sends.end(); ++it)
      if (it->event_id == *d.eventId) n = it;
    v.message = !d.eventId ? fmt::format("dead letter {} in the {} carries no {}", d.id, fin.deadLetterWhere,
                                         h.scenario.poison->deadLetterId)
                : n != h.sends.end()
                    ? fmt::format("event {} is not poison, yet it is in the {} (dead letter {})", n->n,
                                  fin.deadLetterWhere, d.id)
                    : fmt::format("dead letter {} in the {} names event id {}, which no event has", d.id,
                                  fin.deadLetterWhere, *d.eventId);
    if (n != h.sends.end()) v.events = {n->n};
    out.push_back(std::move(v));
  }
  for (const auto& [n, id] : poison) {
    const auto& letters = lettersOf[id];
    if (letters.size() == 1) continue;
    Violation v;
    v.invariant = "poison:dead-lettered";
    v.events = {n};
    v.entries = letters;
    v.ops = sendOps(h, n);
    v.expected = 1;
    v.observed = static_cast<int64_t>(letters.size());
    if (letters.empty()) {
      // At a limit the consumer may still have been about to dead-letter it.
      if (h.end() == RunEnd::Limit) {
        unknown.push_back(fmt::format("poison event {} is not in the {}, but the run did not finish ({})", n,
                                      fin.deadLetterWhere, h.endReason()));
        continue;
      }
      v.kind = "not-dead-lettered";
      v.message = fmt::format("poison event {} is not in the {}: {}", n, fin.deadLetterWhere,
                              h.acked(n) ? "acknowledged without a dead letter (dropped without a trace)"
                                         : "never acknowledged either");
    } else {
      v.kind = "dead-lettered-twice";
      v.message = fmt::format("poison event {} is in the {} {} ({})", n, fin.deadLetterWhere,
                              timesText(static_cast<int64_t>(letters.size())), fmt::join(letters, ", "));
    }
    out.push_back(std::move(v));
  }
  return resultOf(std::move(out), unknown);
}

CheckResult checkPoisonBounded(const HistoryView& h) {
  const int max = h.scenario.poison->maxDeliveries;
  const auto poison = poisonEvents(h);
  std::vector<Violation> out;
  for (const auto& [n, id] : poison) {
    std::map<std::string, std::vector<int64_t>> byEntry;
    for (const DeliveryRec* d : h.deliveriesOf(n)) byEntry[d->entry].push_back(d->op);
    for (const auto& [entry, ops] : byEntry) {
      if (static_cast<int>(ops.size()) <= max) continue;
      Violation v;
      v.kind = "unbounded";
      v.invariant = "poison:bounded";
      v.events = {n};
      v.entries = {entry};
      v.expected = max;
      v.observed = static_cast<int64_t>(ops.size());
      v.ops = ops;
      v.message = fmt::format("poison event {} (entry {}) delivered {} times, more than max_deliveries ({}){}", n,
                              entry, ops.size(), max,
                              h.acked(n) ? "" : ", never acknowledged: redelivered without end");
      out.push_back(std::move(v));
    }
  }
  return resultOf(std::move(out), {});
}

CheckResult checkPoisonNoBlock(const HistoryView& h, const std::vector<CheckResult>& invariants) {
  std::vector<Violation> out;
  std::vector<std::string> unknown;
  const auto poison = poisonEvents(h);
  std::vector<int> numbers;
  for (const auto& [n, id] : poison) numbers.push_back(n);
  for (const auto& [n, fields] : h.eventFields) {
    if (poison.count(n) || h.acked(n)) continue;
    if (h.end() == RunEnd::Limit) {
      unknown.push_back(fmt::format("event {} was never acknowledged, but the run did not finish ({})", n,
                                    h.endReason()));
      continue;
    }
    Violation v;
    v.kind = "blocked";
    v.invariant = "poison:no-block";
    v.events = {n};
    v.ops = sendOps(h, n);
    v.message = fmt::format("event {} was {} behind poison event{} {}", n,
                            h.deliveriesOf(n).empty() ? "never delivered" : "never acknowledged",
                            poison.size() == 1 ? "" : "s", fmt::join(numbers, ", "));
    out.push_back(std::move(v));
  }
  // Every other event applied exactly once is what the scenario's invariants prove, poison events left out.
  for (const auto& r : invariants) {
    if (r.verdict == Verdict::Pass) continue;
    if (r.verdict == Verdict::Unknown) {
      unknown.push_back(fmt::format("{} is unknown: {}", r.checker, r.error));
      continue;
    }
    for (const auto& iv : r.violations) {
      Violation v = iv;
      v.invariant = "poison:no-block";
      v.message = fmt::format("{}: {}", r.checker, iv.message);
      out.push_back(std::move(v));
    }
  }
  return resultOf(std::move(out), unknown);
}

CheckResult checkPoisonNotApplied(const HistoryView& h) {
  const auto poison = poisonEvents(h);
  std::vector<Violation> out;
  std::vector<std::string> unknown;
  bool judged = false;
  for (const auto& inv : h.scenario.invariants) {
    if (inv.kind == "one-row-per-event") {
      // A poison event's id among the rows is its effect.
      judged = true;
      std::map<std::string, int> ids;
      for (const auto& [n, id] : poison) ids[id] = n;
      for (const auto& row : observedRows(h.requireFinal().observed, inv.name, "final")) {
        if (row.empty() || !row[0] || !ids.count(*row[0])) continue;
        Violation v;
        v.kind = "poison-applied";
        v.invariant = "poison:not-applied";
        v.events = {ids[*row[0]]};
        v.message = fmt::format("poison event {} has a row in '{}'", ids[*row[0]], inv.name);
        out.push_back(std::move(v));
      }
      continue;
    }
    if (inv.kind != "sum-of-distinct" && inv.kind != "count-of-distinct") continue;
    judged = true;
    std::map<std::string, int64_t> initial, final;
    for (const auto& row : observedRows(h.requireInitial().observed, inv.name, "initial"))
      initial[rowKey(row, inv.name)] = row.size() > 1 ? integerOf(row[1], inv.name + " value") : 0;
    for (const auto& row : observedRows(h.requireFinal().observed, inv.name, "final"))
      final[rowKey(row, inv.name)] = row.size() > 1 ? integerOf(row[1], inv.name + " value") : 0;
    // What the other events account for: each distinct one once (distinctGroups leaves poison out).
    std::map<std::string, int64_t> expected = initial;
    std::set<std::string> otherKeys;
    for (const auto& g : distinctGroups(h, inv.distinct)) {
      const std::string key = g.fields.count(inv.key) ? g.fields.at(inv.key) : "";
      otherKeys.insert(key);
      expected[key] += inv.sign * (inv.kind == "count-of-distinct" ? 1 : integerOf(g.fields.at(inv.field), inv.field));
    }
    std::map<std::string, std::vector<std::pair<int, int64_t>>> poisonOf; // key -> (event, its value)
    for (const auto& [n, id] : poison) {
      const auto& f = h.eventFields.at(n);
      const std::string key = f.count(inv.key) ? f.at(inv.key) : "";
      int64_t value = 1;
      if (inv.kind == "sum-of-distinct") {
        auto x = f.count(inv.field) ? parseInteger(f.at(inv.field)) : std::nullopt;
        if (!x) continue; // a value that is no number can add nothing
        value = *x;
      }
      poisonOf[key].emplace_back(n, value);
    }
    for (const auto& [key, events] : poisonOf) {
      auto fin = final.find(key);
      if (fin == final.end()) continue; // no row: nothing it could have changed
      const bool fresh = !initial.count(key) && !otherKeys.count(key);
      const int64_t diff = fin->second - expected[key];
      if (diff == 0 && !fresh) continue;
      // The application counts of the key's poison events (each up to its deliveries, at least once) that
      // give the difference.
      std::vector<int> caps;
      for (const auto& [n, value] : events) caps.push_back(std::max(1, h.opportunities(n)));
      std::vector<std::vector<int>> fits;
      std::vector<int> c(events.size(), 0);
      for (int guard = 0; guard < 100000; ++guard) {
        size_t i = 0;
        while (i < c.size() && ++c[i] > caps[i]) c[i++] = 0;
        if (i == c.size()) break;
        int64_t sum = 0;
        for (size_t j = 0; j < c.size(); ++j) sum += inv.sign * c[j] * events[j].second;
        if (sum == diff) fits.push_back(c);
      }
      Violation v;
      v.invariant = "poison:not-applied";
      v.key = key;
      v.expected = expected[key];
      v.observed = fin->second;
      if (fresh) {
        v.kind = "poison-applied";
        for (const auto& [n, value] : events) v.events.push_back(n);
        v.message = fmt::format("a row for {} ('{}') appeared, which only poison event{} {} name{}", key, inv.name,
                                events.size() == 1 ? "" : "s", fmt::join(v.events, ", "), events.size() == 1 ? "s" : "");
        out.push_back(std::move(v));
        continue;
      }
      if (fits.empty()) {
        unknown.push_back(fmt::format("{} of {} is {}, expected {} from the other events: a difference no "
                                      "application of its poison events explains (invariant:{} says what)",
                                      inv.name, key, fin->second, expected[key], inv.name));
        continue;
      }
      v.kind = "poison-applied";
      std::vector<std::string> said;
      for (size_t j = 0; j < events.size(); ++j) {
        bool some = false;
        for (const auto& f : fits) some = some || f[j] > 0;
        if (!some) continue;
        if (fits.size() == 1) {
          v.events.push_back(events[j].first);
          said.push_back(fmt::format("poison event {} applied {}", events[j].first, timesText(fits[0][j])));
        } else {
          v.candidates.push_back(events[j].first);
        }
      }
      v.message = fits.size() == 1
                      ? fmt::format("{}; {} of {} is {}, expected {}", fmt::join(said, ", "), inv.name, key,
                                    fin->second, expected[key])
                      : fmt::format("poison events applied, one of {} ({} of {} is {}, expected {})",
                                    fmt::join(v.candidates, ", "), inv.name, key, fin->second, expected[key]);
      out.push_back(std::move(v));
    }
  }
  if (!judged) unknown.push_back("no invariant of the scenario (a sum, a count, one row per event) can show a poison event's effect");
  return resultOf(std::move(out), unknown);
}

} // namespace idem::detail
