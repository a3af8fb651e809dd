#include "report/shard_section.h"

#include "report/section_json.h"

namespace idem {

using section_json::optionalOf;

ShardSection shardSection(int index, int count, std::string command, int64_t items) {
  ShardSection s;
  s.index = index;
  s.count = count;
  s.command = std::move(command);
  s.items = items;
  return s;
}

void to_json(nlohmann::json& j, const RunSummaryEntry& r) {
  j = {{"run", r.run}, {"verdict", toString(r.verdict)}, {"planned", r.planned}, {"fired", r.fired}};
  if (r.processes) j["processes"] = *r.processes;
  if (r.kinds) j["kinds"] = *r.kinds;
  if (r.reason) j["reason"] = *r.reason;
}

void from_json(const nlohmann::json& j, RunSummaryEntry& r) {
  r.run = j.at("run").get<int64_t>();
  r.verdict = verdictFromString(j.at("verdict").get<std::string>());
  r.planned = j.at("planned").get<std::vector<std::string>>();
  r.fired = j.at("fired").get<std::vector<std::string>>();
  r.processes = optionalOf<int>(j, "processes");
  r.kinds = optionalOf<std::vector<std::string>>(j, "kinds");
  r.reason = optionalOf<std::string>(j, "reason");
}

void to_json(nlohmann::json& j, const ShardSection& s) {
  j = {{"index", s.index}, {"count", s.count}, {"command", s.command}, {"items", s.items}};
  if (s.runs) j["runs"] = *s.runs;
  if (s.baseline) j["baseline"] = toString(*s.baseline);
  if (s.failOnViolation) j["fail_on_violation"] = *s.failOnViolation;
}

void from_json(const nlohmann::json& j, ShardSection& s) {
  s.index = j.at("index").get<int>();
  s.count = j.at("count").get<int>();
  s.command = j.at("command").get<std::string>();
  s.items = j.at("items").get<int64_t>();
  s.runs = optionalOf<std::vector<RunSummaryEntry>>(j, "runs");
  s.baseline.reset();
  if (auto b = optionalOf<std::string>(j, "baseline")) s.baseline = verdictFromString(*b);
  s.failOnViolation = optionalOf<bool>(j, "fail_on_violation");
}

} // namespace idem
