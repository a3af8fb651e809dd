/// The classes of a comparison: kill points grouped by the gap between two steps of a consumer, and the
/// generated classes (retries, late retries, reordered streams).
#include "driver/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>

namespace idem::compare {

namespace {

Class gapClass(const std::string& prev, const std::string& next) {
  Class c;
  c.kind = "kill";
  c.id = fmt::format("kill:{}>{}", prev.empty() ? "start" : prev, next.empty() ? "end" : next);
  if (prev.empty()) c.label = fmt::format("at start, before {}", next);
  else if (next.empty()) c.label = fmt::format("after {}, at the end", prev);
  else c.label = fmt::format("after {}, before {}", prev, next);
  std::vector<std::string> points;
  if (!prev.empty()) points.push_back(fmt::format("after:{}#k", prev));
  if (!next.empty()) points.push_back(fmt::format("before:{}#k", next));
  c.description = points.size() == 2 ? points[0] + ", " + points[1] : points[0];
  return c;
}

} // namespace

void to_json(nlohmann::json& j, const Class& c) {
  j = {{"id", c.id}, {"kind", c.kind}, {"label", c.label}, {"description", c.description}};
}

std::vector<ClassedPoint> classifyKillPoints(const std::vector<Op>& history) {
  // Valkey's SELECT is the harness's doing (each workspace has its own db; a target on db 0 sends none):
  // it is no step of the target's own logic, and no kill point.
  std::vector<const Op*> steps;
  for (const auto& op : history)
    if (op.type == "step" && !(op.value.value("server", "") == "valkey" && op.value.value("verb", "") == "SELECT"))
      steps.push_back(&op);
  std::stable_sort(steps.begin(), steps.end(), [](const Op* a, const Op* b) {
    return a->value.value("t_req_us", int64_t{0}) < b->value.value("t_req_us", int64_t{0});
  });
  // Per process, the steps that count (reads that delivered nothing change nothing).
  std::map<std::string, std::vector<const Op*>> byProcess;
  for (const Op* op : steps)
    if (!op->value.value("empty", false)) byProcess[op->process].push_back(op);
  std::map<const Op*, std::pair<std::string, std::string>> around; // step -> (previous verb, next verb)
  for (const auto& [proc, list] : byProcess) {
    for (size_t i = 0; i < list.size(); ++i) {
      std::string prev = i > 0 ? list[i - 1]->value.value("verb", "") : "";
      std::string next = i + 1 < list.size() ? list[i + 1]->value.value("verb", "") : "";
      around[list[i]] = {prev, next};
    }
  }
  std::vector<ClassedPoint> out;
  for (const Op* op : steps) {
    const auto& v = op->value;
    if (v.value("outcome", "") != "ok" || v.value("empty", false)) continue;
    auto [prev, next] = around[op];
    std::string verb = v.value("verb", "");
    for (auto when : {KillPoint::When::Before, KillPoint::When::After}) {
      ClassedPoint p;
      p.kill.when = when;
      p.kill.verb = verb;
      p.kill.k = v.value("k", 0);
      p.cls = when == KillPoint::When::Before ? gapClass(prev, verb) : gapClass(verb, next);
      p.server = v.value("server", "");
      p.detail = v.value("detail", "");
      out.push_back(std::move(p));
    }
  }
  return out;
}

std::vector<ClassedPoint> sample(const std::vector<ClassedPoint>& points, int n) {
  if (n <= 0 || points.size() <= static_cast<size_t>(n)) return points;
  if (n == 1) return {points.front()};
  std::vector<ClassedPoint> out;
  for (int j = 0; j < n; ++j) out.push_back(points[(j * (points.size() - 1) + (n - 1) / 2) / (n - 1)]);
  return out;
}

std::vector<Generated> generatedClasses(const Scenario& sc, int runs, int events, uint64_t seed) {
  std::vector<Generated> out(3);
  out[0].cls = {"retry", "retry", "retries",
                fmt::format("{} generated schedules of {} events (seeds {}…), event 2 sent twice", runs, events, seed)};
  out[1].cls = {"late-retry", "retry", "late retries",
                fmt::format("the same schedules, the second copy of event 2 sent only after the first was acknowledged")};
  out[2].cls = {"reorder", "reorder", "reordered stream",
                fmt::format("the same schedules with the stream entries shuffled (events arrive out of order)")};
  for (int i = 0; i < runs; ++i) {
    uint64_t s = seed + static_cast<uint64_t>(i);
    Schedule base = generatedSchedule(sc, events, s);
    out[0].schedules.push_back(base);
    Schedule late = base;
    if (late.stream.size() > static_cast<size_t>(events)) late.stream.back().phase = 2;
    out[1].schedules.push_back(late);
    Schedule shuffled = base;
    std::mt19937_64 rng(s ^ 0x5eed5eedULL);
    auto before = shuffled.stream;
    std::shuffle(shuffled.stream.begin(), shuffled.stream.end(), rng);
    bool same = std::equal(before.begin(), before.end(), shuffled.stream.begin(),
                           [](const StreamEntry& a, const StreamEntry& b) { return a.event == b.event; });
    if (same) std::reverse(shuffled.stream.begin(), shuffled.stream.end());
    out[2].schedules.push_back(shuffled);
  }
  return out;
}

void mergeClassOrder(std::vector<Class>& order, const std::vector<Class>& mine) {
  auto pos = [&](const std::string& id) {
    return std::find_if(order.begin(), order.end(), [&](const Class& c) { return c.id == id; });
  };
  std::string previous;
  for (const auto& c : mine) {
    if (pos(c.id) == order.end()) {
      auto at = previous.empty() ? order.begin() : pos(previous);
      order.insert(previous.empty() ? order.begin() : at == order.end() ? order.end() : at + 1, c);
    }
    previous = c.id;
  }
}

} // namespace idem::compare
