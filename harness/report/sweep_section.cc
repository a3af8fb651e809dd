#include "report/sweep_section.h"

#include "report/section_json.h"

namespace idem {

using section_json::optionalOf;
using section_json::orNull;

void to_json(nlohmann::json& j, const SweepPoint& p) {
  j = {{"point", p.point}, {"kind", p.kind}, {"server", p.server}, {"detail", p.detail}, {"class", p.cls},
       {"verdict", toString(p.verdict)}, {"fired", p.fired}, {"runs", p.runs}, {"kinds", p.kinds}};
  if (p.index) j["index"] = *p.index;
  if (p.replay) j["replay"] = *p.replay;
}

void from_json(const nlohmann::json& j, SweepPoint& p) {
  p.point = j.at("point").get<std::string>();
  p.kind = j.value("kind", std::string());
  p.server = j.value("server", std::string());
  p.detail = j.value("detail", std::string());
  p.cls = j.value("class", std::string());
  p.verdict = verdictFromString(j.at("verdict").get<std::string>());
  p.fired = j.at("fired").get<bool>();
  p.runs = j.value("runs", 1);
  p.kinds = j.value("kinds", std::set<std::string>());
  p.index = optionalOf<size_t>(j, "index");
  p.replay = optionalOf<std::string>(j, "replay");
}

void to_json(nlohmann::json& j, const SkippedStep& s) { j = {{"step", s.step}, {"reason", s.reason}}; }

void from_json(const nlohmann::json& j, SkippedStep& s) {
  s.step = j.at("step").get<std::string>();
  s.reason = j.at("reason").get<std::string>();
}

void to_json(nlohmann::json& j, const InterleaveCell& c) {
  j = {{"until", c.until}, {"point", c.point}, {"verdict", toString(c.verdict)}, {"fired", c.fired}, {"runs", c.runs}, {"kinds", c.kinds}};
}

void from_json(const nlohmann::json& j, InterleaveCell& c) {
  c.until = j.value("until", std::string());
  c.point = j.at("point").get<std::string>();
  c.verdict = verdictFromString(j.at("verdict").get<std::string>());
  c.fired = j.at("fired").get<bool>();
  c.runs = j.value("runs", 1);
  c.kinds = j.value("kinds", std::set<std::string>());
}

void to_json(nlohmann::json& j, const InterleaveRow& r) {
  j = {{"hold", r.hold}, {"server", r.server}, {"detail", r.detail}, {"role", r.role}, {"cells", r.cells}};
  if (r.index) j["index"] = *r.index;
}

void from_json(const nlohmann::json& j, InterleaveRow& r) {
  r.hold = j.at("hold").get<std::string>();
  r.server = j.value("server", std::string());
  r.detail = j.value("detail", std::string());
  r.role = j.value("role", std::string());
  r.cells = j.at("cells").get<std::vector<InterleaveCell>>();
  r.index = optionalOf<size_t>(j, "index");
}

void to_json(nlohmann::json& j, const InterleaveGrid& g) {
  j = {{"rows", g.rows}, {"consumers", g.consumers}, {"failed", g.failed}, {"unknown", g.unknown},
       {"not_fired", g.notFired}, {"reduction", g.reduction}};
}

void from_json(const nlohmann::json& j, InterleaveGrid& g) {
  g.rows = j.at("rows").get<std::vector<InterleaveRow>>();
  g.consumers = j.value("consumers", 2);
  g.failed = j.value("failed", 0);
  g.unknown = j.value("unknown", 0);
  g.notFired = j.value("not_fired", 0);
  g.reduction = j.value("reduction", std::string());
}

void to_json(nlohmann::json& j, const SweepSection& s) {
  if (s.interleave) { // sweep --interleave: a grid of holds, none of a sweep's own counts
    j = {{"points", s.points}, {"fault_kinds", s.faultKinds}, {"skipped", s.skipped}, {"failed", s.failed},
         {"unknown", s.unknown}, {"not_fired", s.notFired}, {"interleave", *s.interleave}};
    if (!s.faultsDigest.empty()) j["faults_digest"] = s.faultsDigest; // of the grid's hold points, when it has some
    return;
  }
  j = {{"points", s.points}, {"fault_kinds", s.faultKinds}, {"skipped", s.skipped}, {"failed", s.failed},
       {"unknown", s.unknown}, {"not_fired", s.notFired}, {"trace_points", s.tracePoints},
       {"selected_points", s.selectedPoints}, {"classes", s.classes}, {"reduced", s.reduced}, {"not_run", s.notRun},
       {"reduce_above", orNull(s.reduceAbove)}, {"events", orNull(s.events)}, {"no_faults", orNull(s.noFaults)},
       {"faults_digest", s.faultsDigest}, {"trace_from", orNull(s.traceFrom)}};
}

void from_json(const nlohmann::json& j, SweepSection& s) {
  s.points = j.at("points").get<std::vector<SweepPoint>>();
  s.faultKinds = j.value("fault_kinds", std::vector<std::string>());
  s.skipped = j.value("skipped", std::vector<SkippedStep>());
  s.failed = j.value("failed", 0);
  s.unknown = j.value("unknown", 0);
  s.notFired = j.value("not_fired", 0);
  s.tracePoints = j.value("trace_points", size_t(0));
  s.selectedPoints = j.value("selected_points", size_t(0));
  s.classes = j.value("classes", size_t(0));
  s.reduced = j.value("reduced", false);
  s.notRun = j.value("not_run", size_t(0));
  s.reduceAbove = optionalOf<int>(j, "reduce_above");
  s.events = optionalOf<int>(j, "events");
  s.noFaults = optionalOf<std::string>(j, "no_faults");
  s.faultsDigest = j.value("faults_digest", std::string());
  s.traceFrom = optionalOf<std::string>(j, "trace_from");
  s.interleave = optionalOf<InterleaveGrid>(j, "interleave");
}

} // namespace idem
