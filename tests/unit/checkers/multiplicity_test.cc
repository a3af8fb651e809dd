// Which application counts explain an observed value: exact, bounded, honest about cut-offs, and fast on
// many equal amounts.
#include "checkers/multiplicity.h"

#include <catch2/catch.hpp>

using namespace idem::detail;

TEST_CASE("explain: every application count that adds up, closest to 'each once' first", "[multiplicity]") {
  // Two events of 5000, one of 3000, each delivered once: 13000 is only "each once".
  auto e = explain({{5000, 0, 1}, {5000, 0, 1}, {3000, 0, 1}}, 13000);
  CHECK(e.complete);
  REQUIRE(e.solutions.size() == 1);
  CHECK(e.solutions[0] == std::vector<int>{1, 1, 1});
  // The second 5000 delivered twice: "each once" and "the second twice, the first never" both give 13000.
  e = explain({{5000, 0, 1}, {5000, 0, 2}, {3000, 0, 1}}, 13000);
  CHECK(e.complete);
  REQUIRE(e.solutions.size() == 2);
  CHECK(e.solutions[0] == std::vector<int>{1, 1, 1});
  CHECK(e.solutions[1] == std::vector<int>{0, 2, 1});
  // Negative amounts (a stock going down).
  e = explain({{-100, 0, 1}, {300, 0, 1}}, 200);
  REQUIRE(e.solutions.size() == 1);
  CHECK(e.solutions[0] == std::vector<int>{1, 1});
  // Nothing adds up.
  e = explain({{7, 0, 1}}, 5);
  CHECK(e.complete);
  CHECK(e.solutions.empty());
  // A unit that was never delivered can't be applied.
  e = explain({{5, 0, 0}, {5, 0, 2}}, 10);
  REQUIRE(e.solutions.size() == 1);
  CHECK(e.solutions[0] == std::vector<int>{0, 2});
}

TEST_CASE("explain: powers of three decode every count 0..2 uniquely", "[multiplicity]") {
  std::vector<Unit> units;
  for (int64_t a : {100, 300, 900, 2700, 8100, 24300, 72900}) units.push_back({a, 0, 2});
  // Every vector of counts in {0,1,2}^7 is the only explanation of its own sum.
  std::vector<int> m(units.size(), 0);
  int checked = 0;
  for (int code = 0; code < 2187; ++code) {
    int64_t total = 0;
    for (size_t i = 0, c = code; i < m.size(); ++i, c /= 3) {
      m[i] = static_cast<int>(c % 3);
      total += m[i] * units[i].amount;
    }
    auto e = explain(units, total);
    REQUIRE(e.complete);
    REQUIRE(e.solutions.size() == 1);
    CHECK(e.solutions[0] == m);
    ++checked;
  }
  CHECK(checked == 2187);
}

TEST_CASE("explain: many equal amounts are searched as one class", "[multiplicity]") {
  // 40 events of 1 (a count) each delivered once: the count 40 is only "each once", found at once.
  std::vector<Unit> ones(40, Unit{1, 0, 1});
  auto e = explain(ones, 40);
  CHECK(e.complete);
  REQUIRE(e.solutions.size() == 1);
  // One of them delivered twice: 40 is also "that one twice, any other never": 40 more explanations.
  ones[7].hi = 2;
  e = explain(ones, 40, 1000);
  CHECK(e.complete);
  CHECK(e.solutions.size() == 40);
  CHECK(e.solutions[0] == std::vector<int>(40, 1));
}

TEST_CASE("explain: budgets make it incomplete, never silently partial", "[multiplicity]") {
  std::vector<Unit> wide(20, Unit{1, 0, 1});
  auto e = explain(wide, 10, 16);
  CHECK_FALSE(e.complete); // C(20,10) explanations: stops at 16
  CHECK(e.solutions.size() == 16);
  std::vector<Unit> odd;
  for (int i = 0; i < 24; ++i) odd.push_back({1000 + 17 * i, 0, 2});
  e = explain(odd, 24000 + 17 * 276, 32, 500);
  CHECK_FALSE(e.complete); // node budget
}
