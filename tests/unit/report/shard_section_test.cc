// report.json's "shard" section as a typed value (report/shard_section.h): what check, sweep and compare
// write comes back equal through from_json, its text unchanged, and a shard section merge cannot trust is
// refused: by from_json with an exception, by merge with one line naming the shard.
#include "report/shard_section.h"

#include "core/error.h"
#include "report/merge.h"

#include <catch2/catch.hpp>

using namespace idem;
using json = nlohmann::json;

namespace {

ShardSection checkShard() {
  ShardSection s{.index = 1, .count = 3, .command = "check", .items = 8};
  RunSummaryEntry lost{.run = 2, .verdict = Verdict::Unknown, .planned = {"after:COMMIT#1", "before:XACK#2"},
                       .fired = {"after:COMMIT#1"}, .kinds = std::nullopt, .reason = "a planned fault never fired"};
  RunSummaryEntry failed{.run = 5, .verdict = Verdict::Fail, .planned = {"after:COMMIT#3"}, .fired = {"after:COMMIT#3"},
                         .processes = 2, .kinds = std::vector<std::string>{"duplicate", "lost"}, .reason = std::nullopt};
  s.runs = std::vector<RunSummaryEntry>{lost, failed};
  return s;
}

} // namespace

TEST_CASE("each command's shard section comes back equal through from_json, its JSON text unchanged") {
  ShardSection sweep{.index = 0, .count = 2, .command = "sweep", .items = 14, .baseline = Verdict::Pass};
  ShardSection compare{.index = 1, .count = 2, .command = "compare", .items = 6, .failOnViolation = true};
  for (const ShardSection& s : {checkShard(), sweep, compare}) {
    const json j = s;
    CHECK(j.get<ShardSection>() == s);
    CHECK(json(j.get<ShardSection>()).dump() == j.dump());
  }
  // The members as the writers named them before the type, and only the command's own.
  CHECK(json(sweep).dump() == R"({"baseline":"pass","command":"sweep","count":2,"index":0,"items":14})");
  CHECK(json(compare).dump() == R"({"command":"compare","count":2,"fail_on_violation":true,"index":1,"items":6})");
  const json runs = json(checkShard())["runs"];
  CHECK(runs[0].dump() == R"({"fired":["after:COMMIT#1"],"planned":["after:COMMIT#1","before:XACK#2"],)"
                          R"("reason":"a planned fault never fired","run":2,"verdict":"unknown"})");
  CHECK(runs[1].dump() == R"({"fired":["after:COMMIT#3"],"kinds":["duplicate","lost"],"planned":["after:COMMIT#3"],)"
                          R"("processes":2,"run":5,"verdict":"fail"})");
}

TEST_CASE("a shard section with a member missing or mistyped does not read") {
  const json good = checkShard();
  for (const char* member : {"index", "count", "command", "items"}) {
    json j = good;
    j.erase(member);
    CHECK_THROWS_AS(j.get<ShardSection>(), json::exception);
  }
  json j = good;
  j["index"] = "1";
  CHECK_THROWS_AS(j.get<ShardSection>(), json::exception);
  j = good;
  j["runs"][0]["planned"] = {7};
  CHECK_THROWS_AS(j.get<ShardSection>(), json::exception);
  j = good;
  j["runs"][1].erase("fired");
  CHECK_THROWS_AS(j.get<ShardSection>(), json::exception);
  j = good;
  j["runs"][1]["verdict"] = "maybe";
  CHECK_THROWS_AS(j.get<ShardSection>(), std::invalid_argument);
  j = good;
  j["baseline"] = "green";
  CHECK_THROWS_AS(j.get<ShardSection>(), std::invalid_argument);
}

TEST_CASE("merge refuses a shard whose shard section does not read, in one line naming the shard") {
  auto report = [](const json& shard) {
    return ShardReport{"s0", {{"command", "sweep"}, {"verdict", "pass"}, {"seed", uint64_t(5)}, {"targets", {"t"}},
                              {"shard", shard}, {"sweep", {{"points", json::array()}}}, {"runs", json::array()}}};
  };
  auto refusal = [](const ShardReport& r) -> std::string {
    try {
      mergeReports({r});
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  json shard = ShardSection{.index = 0, .count = 1, .command = "sweep", .items = 0, .baseline = Verdict::Pass};
  shard["baseline"] = "green";
  const std::string why = refusal(report(shard));
  CHECK(why.find("merge: s0: field '/shard': 'green' is not a verdict") == 0);
  CHECK(why.find('\n') == std::string::npos);
  shard.erase("items");
  CHECK(refusal(report(shard)).find("field '/shard/items' is missing") != std::string::npos);
}
