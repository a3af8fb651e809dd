// Shards of a check, sweep or compare (search/shard.h): the slices of N shards are disjoint and their
// union is every index, whatever n and N; --shard parses I/N and auto/N from the environment conventions.
#include "search/shard.h"

#include "core/error.h"

#include <catch2/catch.hpp>

#include <map>
#include <set>

using namespace idem;

namespace {

std::optional<std::string> none(const std::string&) { return std::nullopt; }

auto envOf(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

} // namespace

TEST_CASE("the slices of N shards partition the indices 0..n-1, each in order") {
  for (size_t n : {0u, 1u, 3u, 7u, 400u, 401u})
    for (int count : {1, 2, 3, 4, 7, 16}) {
      std::multiset<size_t> seen;
      for (int i = 0; i < count; ++i) {
        auto slice = shardItems(n, Shard{i, count});
        CHECK(std::is_sorted(slice.begin(), slice.end()));
        for (size_t x : slice) {
          CHECK(static_cast<int>(x % count) == i);
          seen.insert(x);
        }
      }
      REQUIRE(seen.size() == n); // no index twice
      for (size_t x = 0; x < n; ++x) CHECK(seen.count(x) == 1);
    }
  CHECK(shardItems(10, Shard{1, 4}) == std::vector<size_t>{1, 5, 9});
}

TEST_CASE("shard I/N is 0-based, and every malformed form is a usage error") {
  auto s = parseShard("2/4", none);
  CHECK(s.index == 2);
  CHECK(s.count == 4);
  CHECK(s.str() == "2/4");
  CHECK(parseShard("0/1", none).count == 1);
  for (const char* bad : {"4/4", "-1/4", "1/0", "1", "a/4", "1/4x", "", "/4", "1/", "1/10001"})
    CHECK_THROWS_AS(parseShard(bad, none), UsageError);
}

TEST_CASE("shard auto/N reads JOB_COMPLETION_INDEX (0-based) before CI_NODE_INDEX (1-based)") {
  CHECK(parseShard("auto/4", envOf({{"JOB_COMPLETION_INDEX", "3"}})).index == 3);
  CHECK(parseShard("auto/4", envOf({{"CI_NODE_INDEX", "1"}})).index == 0);
  CHECK(parseShard("auto/4", envOf({{"CI_NODE_INDEX", "4"}})).index == 3);
  CHECK(parseShard("auto/4", envOf({{"JOB_COMPLETION_INDEX", "0"}, {"CI_NODE_INDEX", "4"}})).index == 0);
  CHECK_THROWS_AS(parseShard("auto/4", none), UsageError);
  CHECK_THROWS_AS(parseShard("auto/4", envOf({{"JOB_COMPLETION_INDEX", "4"}})), UsageError);
  CHECK_THROWS_AS(parseShard("auto/4", envOf({{"CI_NODE_INDEX", "0"}})), UsageError);
  CHECK_THROWS_AS(parseShard("auto/4", envOf({{"JOB_COMPLETION_INDEX", "x"}})), UsageError);
}
