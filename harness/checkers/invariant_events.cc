#include "checkers/detail.h"
#include "checkers/diagnosis.h"

#include <fmt/format.h>

#include <set>
#include <stdexcept>

namespace idem::detail {

namespace {

/// id -> number of rows; a NULL id is counted under nullopt.
std::map<std::optional<std::string>, int> countIds(const Rows& rows, const Invariant& inv, const char* which) {
  std::map<std::optional<std::string>, int> out;
  for (const auto& row : rows) {
    if (row.empty()) throw std::runtime_error(fmt::format("'{}': a {} row has no columns", inv.name, which));
    ++out[row[0]];
  }
  return out;
}

} // namespace

CheckResult checkOneRowPerEvent(const Invariant& inv, const HistoryView& h) {
  auto init = countIds(observedRows(h.requireInitial().observed, inv.name, "initial"), inv, "initial");
  auto fin = countIds(observedRows(h.requireFinal().observed, inv.name, "final"), inv, "final");
  std::vector<Group> groups = distinctGroups(h, inv.distinct);
  std::map<std::optional<std::string>, const Group*> byId;
  for (const auto& g : groups) byId[g.value] = &g;
  std::set<std::optional<std::string>> ids;
  for (const auto* m : {&init, &fin}) {
    for (const auto& [id, n] : *m) ids.insert(id);
  }
  for (const auto& [id, g] : byId) ids.insert(id);

  std::vector<Violation> out;
  std::vector<std::string> unknown;
  for (const auto& id : ids) {
    try {
      int before = init.count(id) ? init[id] : 0;
      int expected = before + (byId.count(id) ? 1 : 0);
      int observed = fin.count(id) ? fin[id] : 0;
      if (observed == expected) continue;
      Violation v;
      v.invariant = inv.name;
      v.key = id.value_or("");
      v.expected = expected;
      v.observed = observed;
      std::string idText = id ? "'" + *id + "'" : "NULL";
      if (byId.count(id)) {
        const Group& g = *byId[id];
        v.kind = observed > expected ? "duplicate" : "lost";
        std::string numbers = fmt::format("{} has {} row{} for {} {}, expected {}", inv.name, observed,
                                          observed == 1 ? "" : "s", inv.distinct, idText, expected);
        nameGroups(v, inv, h, {&g}, {observed > expected ? observed - before : 0}, numbers);
      } else {
        v.kind = "phantom";
        v.message = before == 0 ? fmt::format("{} has {} row{} with {} {}, which no event sent carries", inv.name, observed,
                                              observed == 1 ? "" : "s", inv.distinct, idText)
                                : fmt::format("{} has {} row{} with {} {}, expected its initial {}", inv.name, observed,
                                              observed == 1 ? "" : "s", inv.distinct, idText, before);
      }
      out.push_back(std::move(v));
    } catch (const std::exception& e) {
      unknown.push_back(fmt::format("id {}: {}", id.value_or("NULL"), e.what()));
    }
  }
  return resultOf(provenOnly(h, std::move(out), unknown), unknown);
}

} // namespace idem::detail
