#pragma once
// Shared code of the checker tests: the wallet runs the diagnosis tests replay, and result lookup.
#include "checkers/checkers.h"
#include "history_builder.h"

#include <catch2/catch.hpp>

#include <stdexcept>

namespace idem::testing {

inline const CheckResult& result(const std::vector<CheckResult>& rs, const std::string& checker) {
  for (const auto& r : rs) {
    if (r.checker == checker) return r;
  }
  throw std::runtime_error("no result for checker " + checker);
}

/// By value for a temporary vector of results.
inline CheckResult result(std::vector<CheckResult>&& rs, const std::string& checker) {
  return result(static_cast<const std::vector<CheckResult>&>(rs), checker);
}

/// The first violation of `kind` among the checkers' results, or nullptr.
inline const Violation* violationOf(const std::vector<CheckResult>& rs, const std::string& kind) {
  for (const auto& r : rs)
    for (const auto& v : r.violations)
      if (v.kind == kind) return &v;
  return nullptr;
}

/// Observed rows, each a list of columns.
inline nlohmann::json rows(std::initializer_list<std::vector<nlohmann::json>> rs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rs) out.push_back(nlohmann::json(r));
  return out;
}

/// The observed rows of the wallet scenario's balance invariant.
inline nlohmann::json balances(int64_t w1, int64_t w2 = 0, int64_t w3 = 0) {
  using nlohmann::json;
  json rows = json::array({json::array({"w1", std::to_string(w1)}), json::array({"w2", std::to_string(w2)}),
                           json::array({"w3", std::to_string(w3)})});
  return json{{"balance", rows}};
}

/// Sends events with these amounts to w1 along `stream`; returns the entry ids in stream order.
inline std::vector<std::string> sendWallet(HistoryBuilder& b, const std::vector<int>& amounts,
                                           const std::vector<int>& stream) {
  std::vector<std::string> entries;
  for (int n : stream)
    entries.push_back(b.send(n, {{"wallet", "w1"}, {"amount", std::to_string(amounts.at(n - 1))}}));
  return entries;
}

/// A consumer without deduplication applying one entry: BEGIN, UPDATE, COMMIT, XACK.
inline void applySimply(HistoryBuilder& b, const std::string& proc, const std::string& entry, int amount) {
  b.step(proc, "pg", "BEGIN");
  b.step(proc, "pg", "UPDATE", fmt::format("UPDATE wallets SET balance_halala = balance_halala + {} WHERE id = 'w1'", amount));
  b.step(proc, "pg", "COMMIT");
  b.ack(proc, {entry});
}

/// The default wallet schedule run by a consumer without deduplication: one XREADGROUP delivers all six
/// entries to c1, which applies each and acknowledges it. Balance 30000 instead of 25000.
inline std::vector<Op> simpleWalletRun() {
  static const Scenario s = builtin("wallet");
  HistoryBuilder b(s);
  b.initial(balances(0));
  auto entries = sendWallet(b, {5000, 5000, 5000, 5000, 5000}, {1, 2, 3, 4, 5, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", entries);
  for (const auto& e : entries) applySimply(b, "c1", e, 5000);
  b.finalOp(balances(30000));
  return b.ops();
}

/// Ends an HTTP history with its final op (HttpHistoryBuilder::finalOp) and judges it.
inline std::vector<CheckResult> judge(HttpHistoryBuilder& b, const std::map<int, int>& effects, int64_t stock,
                                      const std::string& limit = "", const Scenario& sc = builtin("orders")) {
  b.finalOp(effects, stock, limit);
  return checkAll(sc, b.ops());
}

} // namespace idem::testing
