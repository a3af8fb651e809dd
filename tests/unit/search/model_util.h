#pragma once
// Shared by the tests of the pure model of `check`: built-in scenarios, a kill model like the one
// learned from targets/dedup-table, and a step-by-step history for KillModel::learn.
#include "history/history.h"
#include "scenario/scenario.h"
#include "search/kill_model.h"

#include <filesystem>
#include <string>
#include <vector>

namespace idem::testing {

inline Scenario builtin(const std::string& name) {
  return loadScenario(name, std::filesystem::path(IDEM_SOURCE_DIR) / "scenarios");
}

/// dedup-table's steps: PARSE x2 and two reads per process, BEGIN INSERT UPDATE COMMIT XACK per event.
inline KillModel dedupTableModel() {
  return KillModel::fromLines({{"PARSE", {2, 0}},
                               {"XREADGROUP", {2, 0}},
                               {"XAUTOCLAIM", {1, 0}},
                               {"BEGIN", {0, 1}},
                               {"INSERT", {0, 1}},
                               {"UPDATE", {0.2, 0.8}},
                               {"COMMIT", {0, 1}},
                               {"XACK", {0, 1}}});
}

/// A history of one consumer: `steps` as (verb, outcome, acked?) in order.
struct StepSpec {
  std::string verb;
  std::string outcome = "ok";
  bool acks = false;
  bool empty = false;
};
inline std::vector<Op> stepsHistory(const std::vector<StepSpec>& steps) {
  History h;
  h.append("harness", ops::Plan{});
  std::map<std::string, int> k;
  for (const auto& s : steps) {
    nlohmann::json v{{"index", 0}, {"type", "step"}, {"process", "c1"},
                     {"value", {{"server", "pg"}, {"verb", s.verb}, {"k", ++k[s.verb]}, {"outcome", s.outcome}}}};
    if (s.acks) v["value"]["acked"] = nlohmann::json::array({"1-0"});
    if (s.empty) v["value"]["empty"] = true;
    h.append("c1", v.get<Op>().record); // the step's JSON form, read as history/history.h reads it
  }
  return h.ops();
}

} // namespace idem::testing
