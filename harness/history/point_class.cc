#include "history/point_class.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace idem {

namespace {

/// Where each step of one process stands: its entry work's role, last and near-retry marks.
struct StepPlace {
  std::string role;
  bool last = false, nearRetry = false;
};

bool claimVerb(const std::string& verb) { return verb == "XCLAIM" || verb == "XAUTOCLAIM"; }

std::map<int64_t, StepPlace> placesOf(const std::vector<Op>& history, const std::string& process,
                                      const std::string& lastEntry) {
  // Every delivery of each entry, in request order, with the verb that made it.
  std::map<std::string, std::vector<std::pair<int64_t, std::string>>> deliveries;
  for (const auto& [op, s] : recordsOf<ops::Step>(history))
    for (const auto& d : s->delivered) deliveries[d.entry].emplace_back(s->tReqUs, s->verb);

  std::map<int64_t, StepPlace> out;
  auto works = entryWork(history, process);
  std::vector<bool> near(works.size(), false);
  for (size_t i = 0; i < works.size(); ++i) {
    if (!works[i].retry) continue;
    if (i > 0) near[i - 1] = true;
    if (i + 1 < works.size()) near[i + 1] = true;
    for (size_t j = 0; j < works.size(); ++j)
      if (!works[j].retry && works[j].event == works[i].event) near[j] = true;
  }
  for (size_t i = 0; i < works.size(); ++i) {
    const auto& w = works[i];
    StepPlace place;
    place.last = !lastEntry.empty() && w.entry == lastEntry;
    place.nearRetry = near[i];
    // Redelivered: handed over more than once up to its acknowledgement, or by a claim.
    const int64_t ackUs = w.steps.empty() ? 0 : w.steps.back().step->tReqUs;
    int count = 0;
    bool claimed = false;
    for (const auto& [us, verb] : deliveries[w.entry]) {
      if (us > ackUs) break;
      ++count;
      claimed = claimed || claimVerb(verb);
    }
    place.role = w.retry ? "retry" : (count > 1 || claimed) ? "redelivery" : "first";
    for (const auto& p : w.steps) out[p.op->index] = place;
  }
  // The steps in no entry's work: before the first read that handed the process entries, or after.
  bool delivered = false;
  for (const auto& p : processSteps(history, process)) {
    delivered = delivered || (p.step->replied() && !p.step->delivered.empty());
    if (!out.count(p.op->index)) out[p.op->index] = {delivered ? "end" : "start", false, false};
  }
  return out;
}

} // namespace

std::vector<PointClass> classifyPoints(const std::vector<Op>& history, const std::vector<TracePoint>& points) {
  std::string lastEntry;
  for (const auto& [op, s] : recordsOf<ops::Send>(history)) lastEntry = s->entry;
  std::map<std::string, std::map<int64_t, StepPlace>> places;
  std::vector<PointClass> out;
  for (const auto& p : points) {
    auto it = places.find(p.process);
    if (it == places.end()) it = places.emplace(p.process, placesOf(history, p.process, lastEntry)).first;
    StepPlace place;
    if (auto s = it->second.find(p.opIndex); s != it->second.end()) place = s->second;
    else place.role = "end";
    PointClass c;
    c.role = place.role;
    c.last = place.last;
    c.nearRetry = place.nearRetry;
    c.key = fmt::format("{}:{} prev={} role={}{}", p.fault.when == When::Before ? "before" : "after", p.fault.verb,
                        p.prevVerb.empty() ? "-" : p.prevVerb, c.role, c.last ? ",last" : "");
    out.push_back(std::move(c));
  }
  return out;
}

size_t classCount(const std::vector<PointClass>& classes) {
  std::set<std::string> keys;
  for (const auto& c : classes) keys.insert(c.key);
  return keys.size();
}

std::vector<size_t> reducedSelection(const std::vector<PointClass>& classes) {
  std::map<std::string, std::vector<size_t>> members; // key -> its points, in trace order
  for (size_t i = 0; i < classes.size(); ++i) members[classes[i].key].push_back(i);
  std::set<size_t> picked;
  for (const auto& [key, list] : members) {
    picked.insert(list.front());
    picked.insert(list[list.size() / 2]);
    picked.insert(list.back());
    for (size_t i : list)
      if (classes[i].nearRetry) picked.insert(i);
  }
  return {picked.begin(), picked.end()};
}

} // namespace idem
