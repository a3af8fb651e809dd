#include "report/compare_section.h"

#include "report/section_json.h"

namespace idem {

using section_json::optionalOf;

const CompareCell* CompareSection::cell(const std::string& cls, const std::string& target,
                                        const std::string& sinkPolicy) const {
  for (const auto& c : cells)
    if (c.cls == cls && c.target == target && c.sinkPolicy == sinkPolicy) return &c;
  return nullptr;
}

void to_json(nlohmann::json& j, const CompareClass& c) {
  j = {{"id", c.id}, {"kind", c.kind}, {"label", c.label}, {"description", c.description}};
}

void from_json(const nlohmann::json& j, CompareClass& c) {
  c.id = j.at("id").get<std::string>();
  c.kind = j.value("kind", std::string());
  c.label = j.at("label").get<std::string>();
  c.description = j.value("description", std::string());
}

void to_json(nlohmann::json& j, const CompareCell& c) {
  j = {{"class", c.cls},         {"target", c.target}, {"verdict", toString(c.verdict)}, {"kinds", c.kinds},
       {"schedules", c.schedules}, {"failed", c.failed}, {"unknown", c.unknown},         {"example", c.example}};
  if (c.points) j["points"] = *c.points;
  if (c.faultsPlanned) j["faults_planned"] = *c.faultsPlanned;
  if (c.faultsFired) j["faults_fired"] = *c.faultsFired;
  if (c.pattern) j["pattern"] = *c.pattern;
  if (!c.sinkPolicy.empty()) j["sink_policy"] = c.sinkPolicy;
  if (c.replay) j["replay"] = *c.replay;
}

void from_json(const nlohmann::json& j, CompareCell& c) {
  c.cls = j.at("class").get<std::string>();
  c.target = j.at("target").get<std::string>();
  c.verdict = verdictFromString(j.at("verdict").get<std::string>());
  c.kinds = j.value("kinds", std::set<std::string>());
  c.schedules = j.value("schedules", 0);
  c.failed = j.value("failed", 0);
  c.unknown = j.value("unknown", 0);
  c.example = j.value("example", std::string());
  c.points = optionalOf<std::vector<std::string>>(j, "points");
  c.faultsPlanned = optionalOf<int>(j, "faults_planned");
  c.faultsFired = optionalOf<int>(j, "faults_fired");
  c.pattern = optionalOf<std::string>(j, "pattern");
  c.sinkPolicy = j.value("sink_policy", std::string());
  c.replay = optionalOf<std::string>(j, "replay");
}

void to_json(nlohmann::json& j, const CompareTarget& t) {
  j = {{"name", t.name},       {"manifest", t.manifest}, {"verdict", toString(t.verdict)},
       {"kinds", t.kinds},     {"example", t.example},   {"unknown_cells", t.unknownCells}};
  if (!t.sinkPolicy.empty()) j["sink_policy"] = t.sinkPolicy;
}

void from_json(const nlohmann::json& j, CompareTarget& t) {
  t.name = j.at("name").get<std::string>();
  t.manifest = j.value("manifest", std::string());
  t.verdict = verdictFromString(j.at("verdict").get<std::string>());
  t.kinds = j.value("kinds", std::set<std::string>());
  t.example = j.value("example", std::string());
  t.unknownCells = j.value("unknown_cells", 0);
  t.sinkPolicy = j.value("sink_policy", std::string());
}

void to_json(nlohmann::json& j, const CompareCost& c) {
  j = {{"target", c.target}, {"entries", c.entries}, {"steps", c.steps}, {"wall_us", c.wallUs},
       {"msgs_per_s", c.msgsPerS}, {"round_trips_per_msg", c.roundTripsPerMsg}};
  if (!c.sinkPolicy.empty()) j["sink_policy"] = c.sinkPolicy;
}

void from_json(const nlohmann::json& j, CompareCost& c) {
  c.target = j.at("target").get<std::string>();
  c.entries = j.value("entries", int64_t(0));
  c.steps = j.value("steps", int64_t(0));
  c.wallUs = j.value("wall_us", int64_t(0));
  c.msgsPerS = j.at("msgs_per_s").get<double>();
  c.roundTripsPerMsg = j.at("round_trips_per_msg").get<double>();
  c.sinkPolicy = j.value("sink_policy", std::string());
}

void to_json(nlohmann::json& j, const CompareSection& s) {
  j = {{"classes", s.classes},           {"targets", s.targets},     {"cells", s.cells},   {"costs", s.costs},
       {"runs_per_class", s.runsPerClass}, {"per_class", s.perClass}, {"events", s.events}, {"seed", s.seed}};
  if (!s.sinkPolicies.empty()) j["sink_policies"] = s.sinkPolicies;
}

void from_json(const nlohmann::json& j, CompareSection& s) {
  s.classes = j.at("classes").get<std::vector<CompareClass>>();
  s.targets = j.at("targets").get<std::vector<CompareTarget>>();
  s.cells = j.at("cells").get<std::vector<CompareCell>>();
  s.costs = j.value("costs", std::vector<CompareCost>());
  s.runsPerClass = j.value("runs_per_class", 0);
  s.perClass = j.value("per_class", 0);
  s.events = j.value("events", 0);
  s.seed = j.value("seed", uint64_t(0));
  s.sinkPolicies = j.value("sink_policies", std::vector<std::string>());
}

} // namespace idem
