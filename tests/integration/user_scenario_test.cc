/// A scenario written by a user for tables of their own (tests/scenarios/ledger.json: the worked example
/// of docs/scenarios.md, none of the built-ins) is judged with the same rigour: the correct consumer
/// passes with and without a kill, the naive one is caught with the events named.
#include "support.h"

#include <catch2/catch.hpp>

using namespace itest;

namespace {
std::string ledger() { return (repo() / "tests/scenarios/ledger.json").string(); }
} // namespace

TEST_CASE("user scenario: a correct ledger consumer passes, also when killed after a commit") {
  for (std::vector<std::string> extra : {std::vector<std::string>{}, {"--crash", "after:COMMIT#2"}}) {
    std::vector<std::string> args{"run", "--target", testTarget("py-ledger"), "--scenario", ledger()};
    args.insert(args.end(), extra.begin(), extra.end());
    Result r = idemproof(args);
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.report["scenario"] == "ledger");
  }
}

TEST_CASE("user scenario: a naive ledger consumer is caught crediting events 1 and 2 twice") {
  Result r = idemproof({"run", "--target", testTarget("py-ledger-naive"), "--scenario", ledger()});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  auto dups = violations(r.report, "duplicate");
  REQUIRE(dups.size() == 1);
  CHECK(dups[0]["invariant"] == "balance");
  CHECK(dups[0]["key"] == "acc-1");
  // Decodable amounts (docs/verdicts.md): the ledger's amounts start at 1; on acc-1 events 1 and 2, both
  // retried, get 1 and 3.
  CHECK(dups[0]["expected"] == 4);
  CHECK(dups[0]["observed"] == 8);
  CHECK(dups[0]["events"] == nlohmann::json::array({1, 2}));
}

TEST_CASE("user scenario: a target asked for a scenario it does not list is exit 2") {
  Result r = idemproof({"run", "--target", testTarget("py-ledger"), "--scenario", "wallet"});
  CHECK(r.status == 2);
  CHECK(r.err.find("does not implement scenario 'wallet'") != std::string::npos);
}
