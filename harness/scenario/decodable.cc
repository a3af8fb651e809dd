#include "scenario/decodable.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

namespace idem {

namespace {

/// The unit and sign of the scheme for an int field, or 0 when its range holds no non-zero value.
int64_t unitOf(const FieldGen& f) {
  if (f.max >= 1) return std::max<int64_t>(1, f.min);
  if (f.min <= -1) return -std::max<int64_t>(1, -f.max);
  return 0;
}

/// u times the product of `radices`, when it fits the field's range.
std::optional<int64_t> place(const FieldGen& f, const std::vector<int>& radices) {
  int64_t u = unitOf(f);
  if (u == 0) return std::nullopt;
  __int128 v = u;
  for (int r : radices) {
    v *= r;
    if (v > f.max || v < f.min) return std::nullopt;
  }
  if (v > f.max || v < f.min) return std::nullopt;
  return static_cast<int64_t>(v);
}

/// A fixed pseudo-random value of the range for group i of key number `key` (splitmix64), not in `used`.
int64_t fallback(const FieldGen& f, uint64_t key, uint64_t i, const std::set<int64_t>& used) {
  uint64_t span = static_cast<uint64_t>(f.max - f.min) + 1;
  for (uint64_t attempt = 0;; ++attempt) {
    uint64_t z = (key << 32) + i * 0x9E3779B97F4A7C15ULL + attempt * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    int64_t v = f.min + static_cast<int64_t>(span == 0 ? z : z % span);
    if ((v != 0 && !used.count(v)) || attempt > 64) return v;
  }
}

/// Groups of `s`'s events by the value of `distinct`, then by the value of `key`, both in event order.
std::map<std::string, std::vector<std::vector<Event*>>> groupsByKey(const Scenario& sc, Schedule& s,
                                                                    const std::string& distinct, const std::string& key) {
  std::map<std::string, std::vector<std::vector<Event*>>> out;
  std::map<std::string, std::pair<std::string, size_t>> where; // distinct value -> (key, index)
  std::vector<Event*> events;
  for (auto& e : s.events)
    if (!sc.isPoison(e.fields)) events.push_back(&e); // a poison event keeps its values and counts in no sum
  std::sort(events.begin(), events.end(), [](const Event* a, const Event* b) { return a->n < b->n; });
  for (Event* e : events) {
    std::string d = e->fields.count(distinct) ? e->fields.at(distinct) : fmt::format("#{}", e->n);
    std::string k = e->fields.count(key) ? e->fields.at(key) : "";
    auto it = where.find(d);
    if (it != where.end()) {
      out[it->second.first][it->second.second].push_back(e);
      continue;
    }
    auto& list = out[k];
    where[d] = {k, list.size()};
    list.push_back({e});
  }
  return out;
}

} // namespace

int decodableCapacity(const Scenario& sc, const Invariant& inv, int maxCount) {
  if (inv.kind != "sum-of-distinct") return 0;
  const FieldGen* f = sc.fieldGen(inv.field);
  if (!f || f->gen != "int") return 0;
  std::vector<int> radices;
  while (place(*f, radices)) radices.push_back(maxCount + 1);
  return static_cast<int>(radices.size());
}

std::string makeDecodable(const Scenario& sc, Schedule& s, int kills) {
  // How often each stream entry may be delivered: once, and once more after each kill.
  const int perEntry = 1 + std::max(0, kills);
  std::map<int, int> entries;
  for (const auto& e : s.stream) entries[e.event]++;
  std::vector<std::string> said;
  std::set<std::string> done;
  for (const auto& inv : sc.invariants) {
    if (inv.kind == "sum-of-distinct") {
      const FieldGen* f = sc.fieldGen(inv.field);
      if (!f || f->gen != "int" || !done.insert(inv.field).second) continue;
      if (unitOf(*f) == 0) continue;
      std::string distinct = inv.distinct.empty() || inv.distinct == sc.idField() ? "" : inv.distinct;
      int placed = 0, fell = 0, most = 0;
      uint64_t keyNo = 0;
      for (auto& [key, groups] : groupsByKey(sc, s, distinct.empty() ? "\x01" : distinct, inv.key)) {
        // Each group's most applications: its entries times perEntry. The groups that may be applied most
        // take the highest places, where any count decodes; every other place has the radix its group needs.
        std::vector<std::pair<int, size_t>> order; // (cap, group index)
        for (size_t i = 0; i < groups.size(); ++i) {
          int cap = 0;
          for (Event* e : groups[i]) cap += std::max(1, entries[e->n]) * perEntry;
          order.emplace_back(cap, i);
          most = std::max(most, cap);
        }
        std::stable_sort(order.begin(), order.end());
        std::vector<int> radices;
        std::set<int64_t> used;
        for (const auto& [cap, i] : order) {
          auto p = place(*f, radices);
          int64_t v = p ? *p : fallback(*f, keyNo, i, used);
          (p ? placed : fell)++;
          used.insert(v);
          for (Event* e : groups[i]) e->fields[f->name] = std::to_string(v);
          radices.push_back(cap + 1);
        }
        ++keyNo;
      }
      said.push_back(fmt::format(
          "{}: on each {}, the {}s are places of a mixed-radix number: each amount is {} times the product of "
          "(1 + the most applications) of those below it, the ones delivered most on top, so any application "
          "counts up to {} per entry ({} with retries) decode uniquely{}",
          f->name, inv.key, distinct.empty() ? "event" : distinct, unitOf(*f), perEntry, most,
          fell ? fmt::format("; {} did not fit in [{}, {}] and got fixed pseudo-random amounts", fell, f->min, f->max)
               : ""));
    } else if (inv.kind == "latest-version") {
      if (std::find(inv.columns.begin(), inv.columns.end(), inv.version) != inv.columns.end()) continue;
      // The versions of one key carry distinct values of the drawn column fields.
      std::map<std::string, std::vector<Event*>> byKey;
      for (auto& e : s.events)
        if (!sc.isPoison(e.fields)) byKey[e.fields.count(inv.key) ? e.fields.at(inv.key) : ""].push_back(&e);
      for (const auto& col : inv.columns) {
        const FieldGen* f = sc.fieldGen(col);
        if (!f || (f->gen != "pick" && f->gen != "int") || !done.insert(col).second) continue;
        for (auto& [key, events] : byKey) {
          for (size_t i = 0; i < events.size(); ++i) {
            if (f->gen == "pick") events[i]->fields[col] = f->values[i % f->values.size()];
            else if (f->min + static_cast<int64_t>(i) <= f->max) events[i]->fields[col] = std::to_string(f->min + static_cast<int64_t>(i));
          }
        }
        said.push_back(fmt::format("{}: distinct per {} version", col, inv.key));
      }
    }
  }
  return fmt::format("{}", fmt::join(said, "; "));
}

} // namespace idem
