// The reduced sweep finds what the exhaustive one finds, on recorded exhaustive sweeps (tests/golden/sweeps):
// for every reference stream target and Python test target whose sweep fails somewhere, the fault-free
// baseline history of its default schedule and the verdict of every point. The classes and the reduced
// selection are pure functions of the baseline, so the selection of each recorded trace must hold a
// failing point of every class that has one. tests/integration/sweep_reduce_test.cc runs one exhaustive
// sweep end to end and, under the slow label, all of these live (IDEM_UPDATE_GOLDEN=1 records them again).
#include "reduction_check.h"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using namespace idem;
namespace fs = std::filesystem;

TEST_CASE("reduced sweep: on every recorded exhaustive sweep that fails, the reduced selection fails every class the "
          "sweep fails") {
  // Every target whose default-schedule kill sweep fails (no-reconnect fails only under drops).
  const std::vector<std::string> names = {"dedup-valkey",    "py-ack-first", "py-retry-naive", "retry-no-dedup",
                                          "ship-naive",      "simple",       "versioned-naive"};
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(fs::path(IDEM_SOURCE_DIR) / "tests" / "golden" / "sweeps"))
    if (e.path().extension() == ".json") found.push_back(e.path().stem().string());
  std::sort(found.begin(), found.end());
  REQUIRE(found == names);
  size_t reduced = 0;
  for (const auto& name : names) {
    INFO(name);
    std::ifstream in(fs::path(IDEM_SOURCE_DIR) / "tests" / "golden" / "sweeps" / (name + ".json"));
    nlohmann::json rec = nlohmann::json::parse(in);
    auto baseline = History::fromJson(rec["baseline"]).ops();
    auto verdicts = rec["verdicts"].get<std::map<std::string, std::string>>();
    auto c = testing::checkReduction(baseline, verdicts);
    CHECK(c.unjudged.empty());              // the recording is of an exhaustive sweep of this very trace
    CHECK(c.traced == verdicts.size());
    CHECK(c.failed > 0);                    // only sweeps that fail somewhere say anything here
    CHECK(c.missed.empty());
    for (const auto& m : c.missed) UNSCOPED_INFO("missed class: " << m);
    reduced += c.selected < c.traced;
  }
  CHECK(reduced >= 1); // the selection leaves points out of some trace: the check is not vacuous
}
