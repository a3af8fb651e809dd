// report.json with streamed arrays (report.h, StreamedArray): the file is byte for byte what dumping the
// whole document writes, though the arrays were never held as JSON.
#include "report/report.h"
#include "test_util.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace idem;
using json = nlohmann::json;

namespace {

std::string readAll(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json item(size_t i) {
  return {{"run", i + 1}, {"verdict", i == 1 ? "fail" : "pass"}, {"planned", {"after:COMMIT#1", "drop:before:XACK#2"}},
          {"fired", json::array()}, {"reason", "a \"quoted\" reason\nover two lines"}};
}

} // namespace

TEST_CASE("report.json with streamed arrays is what dumping the whole document writes") {
  idem::testing::ScratchDir scratch;
  auto dir = scratch.path / "report";
  json page = {{"command", "check"}, {"verdict", "pass"}, {"runs", json::array()},
               {"check", {{"runs", 3}, {"run_summaries", json::array({item(1)})}, {"notes", {"x"}}}},
               {"shard", {{"index", 0}, {"runs", json::array()}}}, {"zempty", {{"list", {1}}}}};
  for (size_t count : {size_t(3), size_t(0)}) {
    INFO(count);
    std::vector<StreamedArray> streamed{{"check", "run_summaries", count, item}, {"shard", "runs", count, item},
                                        {"zempty", "list", 0, item}};
    writeReport(dir.string(), page, streamed);
    json whole = page;
    whole["check"]["run_summaries"] = json::array();
    whole["shard"]["runs"] = json::array();
    for (size_t i = 0; i < count; ++i) {
      whole["check"]["run_summaries"].push_back(item(i));
      whole["shard"]["runs"].push_back(item(i));
    }
    whole["zempty"]["list"] = json::array();
    CHECK(readAll(dir / "report.json") == whole.dump(2) + "\n");
    CHECK(std::filesystem::exists(dir / "report.html"));
  }
}
