#include "checkers/history_view.h"

#include <fmt/format.h>

#include <stdexcept>

namespace idem::detail {

Rows observedRows(const Observed& observed, const std::string& invariant, const char* which) {
  auto it = observed.find(invariant);
  if (it == observed.end())
    throw std::runtime_error(fmt::format("the {} op has no rows for invariant '{}'", which, invariant));
  return it->second;
}

std::string rowKey(const Row& row, const std::string& invariant) {
  if (row.empty()) throw std::runtime_error(fmt::format("'{}': a row has no columns", invariant));
  if (!row[0]) throw std::runtime_error(fmt::format("'{}': a row's key column is NULL", invariant));
  return *row[0];
}

std::vector<Group> distinctGroups(const HistoryView& h, const std::string& field) {
  std::vector<Group> out;
  std::map<std::string, size_t> index;
  for (const auto& [n, fields] : h.eventFields) { // ordered by event number
    if (h.scenario.isPoison(fields)) continue; // applied by no correct consumer: poison.cc judges them
    auto it = fields.find(field);
    if (it == fields.end())
      throw std::runtime_error(fmt::format("event {} was sent without field '{}'", n, field));
    auto [pos, fresh] = index.emplace(it->second, out.size());
    if (fresh) out.push_back(Group{it->second, {}, fields});
    out[pos->second].events.push_back(n);
  }
  return out;
}

} // namespace idem::detail
