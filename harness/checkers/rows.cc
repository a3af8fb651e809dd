#include "checkers/history_view.h"

#include <fmt/format.h>

#include <stdexcept>

namespace idem::detail {

Rows observedRows(const Op& op, const std::string& invariant) {
  const auto& v = op.value;
  if (!v.is_object() || !v.contains("observed") || !v["observed"].is_object())
    throw std::runtime_error(fmt::format("the {} op (index {}) has no 'observed' object", op.type, op.index));
  const auto& obs = v["observed"];
  if (!obs.contains(invariant))
    throw std::runtime_error(fmt::format("the {} op (index {}) has no rows for invariant '{}'", op.type, op.index, invariant));
  const auto& rows = obs[invariant];
  if (!rows.is_array())
    throw std::runtime_error(fmt::format("the {} op's rows for '{}' are not an array", op.type, invariant));
  Rows out;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].is_array())
      throw std::runtime_error(fmt::format("the {} op's row {} for '{}' is not an array", op.type, i, invariant));
    Row row;
    for (const auto& c : rows[i]) {
      if (c.is_null()) row.push_back(std::nullopt);
      else if (c.is_string()) row.push_back(c.get<std::string>());
      else row.push_back(c.dump());
    }
    out.push_back(std::move(row));
  }
  return out;
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
