#include "search/kill_model.h"

#include "history/trace.h"

#include <algorithm>
#include <cmath>

namespace idem {

std::map<std::string, int> KillModel::reliableCounts(const std::vector<Op>& history) {
  size_t last = history.size();
  for (size_t i = 0; i < history.size(); ++i) {
    const auto* step = history[i].as<ops::Step>();
    if (step && step->replied() && !step->acked.empty()) last = i;
  }
  std::map<std::string, int> counts;
  for (size_t i = 0; i < history.size() && (last == history.size() || i <= last); ++i) {
    const auto* step = history[i].as<ops::Step>();
    if (step && step->replied() && !setUpStep(*step)) counts[step->verb]++;
  }
  counts.erase("");
  return counts;
}

KillModel KillModel::learn(const std::vector<Op>& small, int smallEntries, const std::vector<Op>& large,
                           int largeEntries) {
  KillModel m;
  auto cs = reliableCounts(small), cl = reliableCounts(large);
  auto counted = [&](const std::string& verb) { return cs.count(verb) || cl.count(verb); };
  auto add = [&](const std::string& verb) {
    if (verb.empty() || !counted(verb) || m.lines_.count(verb)) return;
    double s = cs.count(verb) ? cs[verb] : 0, l = cl.count(verb) ? cl[verb] : 0;
    double per = largeEntries > smallEntries ? std::max(0.0, (l - s) / (largeEntries - smallEntries)) : 0.0;
    m.lines_[verb] = {s - per * smallEntries, per};
    m.order_.push_back(verb);
  };
  for (const auto* h : {&large, &small})
    for (const auto& [op, step] : recordsOf<ops::Step>(*h)) {
      add(step->verb);
      if (!step->verb.empty() && !m.servers_.count(step->verb)) m.servers_[step->verb] = step->server;
    }
  return m;
}

int KillModel::bound(const std::string& verb, int events) const {
  auto it = lines_.find(verb);
  if (it == lines_.end() || events < 1) return 0;
  double v = it->second.start + it->second.perEvent * events;
  return std::max(0, static_cast<int>(std::floor(v + 1e-9)));
}

std::string KillModel::server(const std::string& verb) const {
  auto it = servers_.find(verb);
  return it == servers_.end() ? "pg" : it->second;
}

double KillModel::perEvent(const std::string& verb) const {
  auto it = lines_.find(verb);
  return it == lines_.end() ? 0.0 : it->second.perEvent;
}

int KillModel::maxBound(int events) const {
  int m = 0;
  for (const auto& v : order_) m = std::max(m, bound(v, events));
  return m;
}

nlohmann::json KillModel::toJson() const {
  nlohmann::json j = nlohmann::json::object();
  auto round3 = [](double x) { return std::round(x * 1000) / 1000; };
  for (const auto& v : order_) j[v] = {{"start", round3(lines_.at(v).start)}, {"per_event", round3(lines_.at(v).perEvent)}};
  return j;
}

KillModel KillModel::fromLines(const std::vector<std::pair<std::string, VerbLine>>& lines) {
  KillModel m;
  for (const auto& [verb, line] : lines) {
    if (m.lines_.count(verb)) continue;
    m.order_.push_back(verb);
    m.lines_[verb] = line;
  }
  return m;
}

} // namespace idem
