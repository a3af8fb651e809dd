#pragma once
/// What the tests of the anti-pattern classifiers (patterns*_test.cc) share: the wallet's amounts, a failing
/// run's violations of one checker, one of a kind, and the steps of a credit.
#include "check_util.h"

#include "checkers/patterns/patterns.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace idem::testing {

inline const std::vector<int> kAmounts{100, 300, 900, 2700, 8100};

/// The violations of `checker` in a failing run (checkAll classifies them).
inline std::vector<Violation> failing(const Scenario& s, const std::vector<Op>& ops, const std::string& checker) {
  auto rs = checkAll(s, ops);
  REQUIRE(merge(rs) == Verdict::Fail);
  const auto& r = result(rs, checker);
  INFO(r.error);
  REQUIRE(r.verdict == Verdict::Fail);
  return r.violations;
}

inline Violation ofKind(const std::vector<Violation>& vs, const std::string& kind) {
  for (const auto& v : vs)
    if (v.kind == kind) return v;
  throw std::runtime_error("no violation of kind " + kind);
}

inline std::string idOf(const Violation& v) { return v.pattern ? v.pattern->id : ""; }

/// BEGIN, a write, COMMIT, then XACK unless `ack` is false.
inline void credit(HistoryBuilder& b, const std::string& proc, const std::string& entry, bool ack = true) {
  b.step(proc, "pg", "BEGIN");
  b.step(proc, "pg", "UPDATE", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
  b.step(proc, "pg", "COMMIT");
  if (ack) b.ack(proc, {entry});
}

} // namespace idem::testing
