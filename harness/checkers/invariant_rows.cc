#include "checkers/detail.h"
#include "checkers/diagnosis.h"
#include "scenario/scenario_parse.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace idem::detail {

namespace {

using nlohmann::json;

std::map<std::string, Row> keyed(const Rows& rows, const Invariant& inv, const char* which, size_t columns) {
  std::map<std::string, Row> out;
  for (const auto& row : rows) {
    std::string key = rowKey(row, inv.name);
    if (row.size() < columns)
      throw std::runtime_error(fmt::format("'{}': the {} row of key '{}' has {} columns, expected {}", inv.name, which,
                                           key, row.size(), columns));
    if (!out.emplace(key, row).second)
      throw std::runtime_error(fmt::format("'{}': key '{}' appears twice in the {} rows", inv.name, key, which));
  }
  return out;
}

json rowJson(const Row& row) {
  json j = json::array();
  for (const auto& c : row) j.push_back(c ? json(*c) : json());
  return j;
}

std::map<std::string, std::vector<const Group*>> byKey(const std::vector<Group>& groups, const std::string& key) {
  std::map<std::string, std::vector<const Group*>> out;
  for (const auto& g : groups) {
    auto it = g.fields.find(key);
    if (it == g.fields.end()) throw std::runtime_error(fmt::format("event {} has no field '{}'", g.events[0], key));
    out[it->second].push_back(&g);
  }
  return out;
}

/// A key with no event must keep its initial row; returns a phantom violation when it did not.
std::optional<Violation> untouched(const Invariant& inv, const std::string& key, const Row* init, const Row* fin) {
  if (init && fin && *init == *fin) return std::nullopt;
  Violation v;
  v.kind = "phantom";
  v.invariant = inv.name;
  v.key = key;
  if (init) v.expected = rowJson(*init);
  if (fin) v.observed = rowJson(*fin);
  v.message = !init ? fmt::format("{}: a row for {} appeared ({}) although {} had no initial row and no event",
                                  inv.name, key, v.observed.dump(), key)
              : !fin ? fmt::format("{}: the row of {} disappeared although no event was sent for {}", inv.name, key, key)
                     : fmt::format("{}: the row of {} is {}, expected its initial {}: no event was sent for {}", inv.name,
                                   key, v.observed.dump(), v.expected.dump(), key);
  return v;
}

/// Runs `perKey` for every key of the initial rows, final rows and events; keys without events must keep
/// their initial row. Exceptions for one key make the result Unknown for that key only.
CheckResult eachKey(const Invariant& inv, const HistoryView& h, size_t columns,
                    const std::function<void(const std::string&, const std::vector<const Group*>&, const Row* init,
                                             const Row* fin, std::vector<Violation>&, std::vector<std::string>&)>& perKey) {
  auto init = keyed(observedRows(h.requireInitial().observed, inv.name, "initial"), inv, "initial", columns);
  auto fin = keyed(observedRows(h.requireFinal().observed, inv.name, "final"), inv, "final", columns);
  std::vector<Group> groups = distinctGroups(h, inv.distinct);
  auto keyedGroups = byKey(groups, inv.key);
  std::set<std::string> keys;
  for (const auto& [k, r] : init) keys.insert(k);
  for (const auto& [k, r] : fin) keys.insert(k);
  for (const auto& [k, g] : keyedGroups) keys.insert(k);
  std::vector<Violation> out;
  std::vector<std::string> unknown;
  for (const auto& key : keys) {
    const Row* i = init.count(key) ? &init[key] : nullptr;
    const Row* f = fin.count(key) ? &fin[key] : nullptr;
    try {
      if (!keyedGroups.count(key)) {
        if (auto v = untouched(inv, key, i, f)) out.push_back(*v);
      } else {
        perKey(key, keyedGroups[key], i, f, out, unknown);
      }
    } catch (const std::exception& e) {
      unknown.push_back(fmt::format("key {}: {}", key, e.what()));
    }
  }
  return resultOf(provenOnly(h, std::move(out), unknown), unknown);
}

/// Every group of the key lost: none of them took effect.
Violation allLost(const Invariant& inv, const HistoryView& h, const std::string& key,
                  const std::vector<const Group*>& gs, const std::string& numbers) {
  Violation v;
  v.kind = "lost";
  v.invariant = inv.name;
  v.key = key;
  nameGroups(v, inv, h, gs, std::vector<int>(gs.size(), 0), numbers);
  return v;
}

} // namespace

CheckResult checkFinalValue(const Invariant& inv, const HistoryView& h) {
  return eachKey(inv, h, 2, [&](const std::string& key, const std::vector<const Group*>& gs, const Row* init,
                                const Row* fin, std::vector<Violation>& out, std::vector<std::string>& unknown) {
    if (fin && (*fin)[1] && *(*fin)[1] == inv.value) {
      // The value proves an event took effect only if the row did not hold it before.
      if (init && (*init)[1] && *(*init)[1] == inv.value)
        unknown.push_back(fmt::format("{} of {} is '{}' as expected, but it was already '{}' before any event: the "
                                      "row cannot show that an event took effect", inv.name, key, inv.value, inv.value));
      return;
    }
    std::string seen = !fin ? "has no row" : (*fin)[1] ? fmt::format("is '{}'", *(*fin)[1]) : "is NULL";
    Violation v = allLost(inv, h, key, gs, fmt::format("{} of {} {}, expected '{}'", inv.name, key, seen, inv.value));
    v.expected = inv.value;
    v.observed = fin ? rowJson(*fin)[1] : json();
    out.push_back(std::move(v));
  });
}

CheckResult checkLatestVersion(const Invariant& inv, const HistoryView& h) {
  const size_t columns = inv.columns.size() + 1;
  return eachKey(inv, h, columns, [&](const std::string& key, const std::vector<const Group*>& gs, const Row* init,
                                      const Row* fin, std::vector<Violation>& out, std::vector<std::string>& unknown) {
    auto version = [&](const Group& g) {
      auto v = parseInteger(g.fields.at(inv.version));
      if (!v) throw std::runtime_error(fmt::format("event {}: version '{}' is not an integer", g.events[0], g.fields.at(inv.version)));
      return *v;
    };
    auto matches = [&](const Group& g) {
      for (size_t i = 0; i < inv.columns.size(); ++i) {
        const auto& cell = (*fin)[i + 1];
        const std::string& want = g.fields.at(inv.columns[i]);
        if (!cell) return false;
        if (inv.columns[i] == inv.version ? parseInteger(*cell) != parseInteger(want) : *cell != want) return false;
      }
      return true;
    };
    std::vector<const Group*> sorted = gs; // highest version first
    std::stable_sort(sorted.begin(), sorted.end(), [&](const Group* a, const Group* b) { return version(*a) > version(*b); });
    const Group& top = *sorted.front();
    json expected = json::object();
    for (const auto& c : inv.columns) expected[c] = top.fields.at(c);
    expected[inv.version] = top.fields.at(inv.version);
    for (const Group* g : sorted) {
      if (!fin || version(*g) != version(top) || !matches(*g)) continue;
      // The final row is the highest version's; it proves that version won only when no older version, and
      // not the initial row, carries the same values.
      for (const Group* o : sorted) {
        if (version(*o) == version(top) || !matches(*o)) continue;
        unknown.push_back(fmt::format("{} holds version {} ({}) as expected, but {} carries the same values: the row "
                                      "cannot tell which one won", key, version(top), groupLabel(inv, h, top),
                                      groupLabel(inv, h, *o)));
        return;
      }
      if (init && std::equal(fin->begin(), fin->end(), init->begin(), init->end()))
        unknown.push_back(fmt::format("{} holds the highest version's values, but so did its initial row: the row "
                                      "cannot show that an event took effect", key));
      return;
    }
    json observed = json::object();
    for (size_t i = 0; fin && i < inv.columns.size(); ++i) observed[inv.columns[i]] = rowJson(*fin)[i + 1];
    std::string want = fmt::format("expected version {} ({})", version(top), groupLabel(inv, h, top));
    const Group* stale = nullptr;
    for (const Group* g : sorted) {
      if (fin && !stale && matches(*g)) stale = g;
    }
    Violation v;
    if (stale) {
      v.kind = "stale-version";
      v.invariant = inv.name;
      v.key = key;
      v.events = stale->events;
      v.events.insert(v.events.end(), top.events.begin(), top.events.end());
      std::vector<std::string> stories;
      for (const Group* g : {stale, &top}) {
        for (int n : g->events) {
          Story st = eventStory(h, n, false);
          cite(v, st);
          stories.push_back(fmt::format("event {} {}", n, st.text));
        }
      }
      // The older version written while a process worked on the newer one: the race, told as it ran.
      Story race = interleaving(h, stale->events, top.events);
      if (!race.text.empty()) {
        stories.push_back(race.text);
        cite(v, race);
      }
      v.message = fmt::format("{} holds version {} ({}), {}: {}", key, version(*stale), groupLabel(inv, h, *stale),
                              want, fmt::join(stories, "; "));
    } else if (fin && init && std::equal(fin->begin(), fin->end(), init->begin(), init->end())) {
      v = allLost(inv, h, key, sorted, fmt::format("{} still holds its initial row, {}", key, want));
    } else {
      v.kind = fin ? "phantom" : "lost";
      v.invariant = inv.name;
      v.key = key;
      for (const Group* g : sorted) v.candidates.insert(v.candidates.end(), g->events.begin(), g->events.end());
      v.message = fin ? fmt::format("{} holds {}, which no event sent for {} carries; {}", key, observed.dump(), key, want)
                      : fmt::format("{} has no row; {}", key, want);
    }
    v.expected = expected;
    v.observed = fin ? observed : json();
    out.push_back(std::move(v));
  });
}

/// The violations a run that ended at a limit proves: only effects more time can't undo (an extra row, a
/// phantom value). The others (a row not updated yet, an older version still in place) become reasons
/// for unknown: the consumer may still have been about to write them.
std::vector<Violation> provenOnly(const HistoryView& h, std::vector<Violation> vs, std::vector<std::string>& unknown) {
  if (h.end() != RunEnd::Limit) return vs;
  std::vector<Violation> kept;
  for (auto& v : vs) {
    if (v.kind == "duplicate" || v.kind == "phantom") kept.push_back(std::move(v));
    else unknown.push_back(fmt::format("{}, but the run did not finish ({})", v.message, h.endReason()));
  }
  return kept;
}

} // namespace idem::detail
