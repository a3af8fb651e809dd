#pragma once
// Inputs of the report tests: histories and reports recorded from real runs (tests/golden/inputs/), and the
// report the `run` command would write for a recorded history, built with the same pure functions.
#include "checkers/checkers.h"
#include "report/builder.h"
#include "report/report.h"
#include "scenario/scenario.h"

#include "golden.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <system_error>

#include <unistd.h>

namespace idem::testing {

inline std::filesystem::path goldenDir() { return std::filesystem::path(IDEM_SOURCE_DIR) / "tests" / "golden"; }

inline nlohmann::json loadInput(const std::string& name) {
  return nlohmann::json::parse(readFile(goldenDir() / "inputs" / name));
}

/// `j` without the member `pointer` names (a key of an object).
inline nlohmann::json without(nlohmann::json j, const char* pointer) {
  const nlohmann::json::json_pointer p(pointer);
  j.at(p.parent_pointer()).erase(p.back());
  return j;
}

/// The report of `idemproof run` for a history (header fields fixed: no session is involved).
inline nlohmann::json runReportOfOps(const std::vector<Op>& history, const std::string& scenarioName) {
  Scenario sc = loadScenario(scenarioName, std::filesystem::path(IDEM_SOURCE_DIR) / "scenarios");
  RunRecord r;
  r.id = "run";
  const auto& plan = std::get<ops::Plan>(history.front().record);
  r.target = plan.target;
  r.history = history;
  r.schedule = plan.schedule;
  r.results = checkAll(sc, history);
  r.verdict = merge(r.results);
  for (const auto& [op, spawn] : recordsOf<ops::Spawn>(history)) r.logs[op->process] = "logs/run/" + op->process + ".log";
  ReportHeader h;
  h.command = "run";
  h.scenario = sc.name;
  h.scenarioFile = "scenarios/" + sc.name + ".json";
  h.targets = {r.target};
  h.valkeyBinary = "redis-server";
  h.options = {{"claim_idle_ms", 20}, {"deadline_ms", 120000}, {"stall_ms", 3000}, {"grace_ms", 2000},
               {"settle_ms", 50}, {"start_timeout_ms", 60000}, {"max_processes", 20}, {"workers", 2},
               {"scenario_values", false}};
  ReportBuilder b(h);
  b.verdict(r.verdict);
  b.schedule(r.schedule);
  b.addRun(r);
  b.timings({{"total_ms", 1000}, {"schedules", 1}});
  nlohmann::json j = b.build();
  return j;
}

/// The report of `idemproof run` for a recorded history (tests/golden/inputs/).
inline nlohmann::json runReportOf(const std::string& historyFile, const std::string& scenarioName) {
  return runReportOfOps(loadInput(historyFile).get<std::vector<Op>>(), scenarioName);
}

/// A fresh temp directory, under one folder per test process that goes when the process exits (what a
/// test reads back from it, a parser's error, is in its assertion's message).
inline std::filesystem::path scratch(const std::string& what) {
  struct Root {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("idem-test-report-" + std::to_string(::getpid()));
    ~Root() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Root root;
  static std::mt19937_64 rng(std::random_device{}());
  auto p = root.path / (what + "-" + std::to_string(rng()));
  std::filesystem::create_directories(p);
  return p;
}

/// "" when python3's xml.etree parses `xml`, else its error.
inline std::string xmlError(const std::string& xml) {
  auto dir = scratch("xml");
  std::ofstream(dir / "doc.xml", std::ios::binary) << xml;
  std::string cmd = "/usr/bin/python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' '" +
                    (dir / "doc.xml").string() + "' 2>'" + (dir / "err").string() + "'";
  int rc = std::system(cmd.c_str());
  return rc == 0 ? "" : "python3 xml.etree: " + readFile(dir / "err");
}

} // namespace idem::testing
