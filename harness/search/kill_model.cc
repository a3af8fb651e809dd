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
    // A relay's steps are numbered apart (plan/fault.h) and its polls depend on timing: no consumer's verb.
    // A shutdown's steps (a cancel, a LeaveGroup) are no fault points: no count either.
    if (step && step->replied() && !setUpStep(*step) && !step->stopping && !isRelayLabel(history[i].process))
      counts[step->verb]++;
  }
  counts.erase("");
  return counts;
}

namespace {

/// A relay's SELECT that found no row: a poll of an empty outbox, as many as timing makes.
bool relayPoll(const ops::Step& s) { return s.server == "pg" && s.summary == "SELECT 0"; }

/// r1's steps counted per verb: replied, no set-up, no empty poll. How many polls found rows depends on
/// timing too, but never fewer than the rows it sent: a bound on them is reached.
std::map<std::string, int> relayCounts(const std::vector<Op>& history) {
  std::map<std::string, int> counts;
  for (const auto& [op, step] : recordsOf<ops::Step>(history))
    if (op->process == "r1" && step->replied() && !setUpStep(*step) && !step->stopping && !relayPoll(*step))
      counts[step->verb]++;
  counts.erase("");
  return counts;
}

} // namespace

KillModel KillModel::learn(const std::vector<Op>& small, int smallEntries, const std::vector<Op>& large,
                           int largeEntries) {
  // One line per verb through the two counts; `mine` picks the steps the model is of.
  auto fit = [&](std::map<std::string, int> cs, std::map<std::string, int> cl, auto mine) {
    KillModel m;
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
        if (setUpStep(*step) || step->stopping) continue; // a Valkey SELECT is no SQL SELECT; a shutdown, no point
        if (!mine(*op, *step)) continue;
        add(step->verb);
        if (!step->verb.empty() && !m.servers_.count(step->verb)) m.servers_[step->verb] = step->server;
        if (step->replied() && m.lines_.count(step->verb)) m.resources_[step->verb].merge(resourcesOf(*step));
      }
    return m;
  };
  // A relay's steps are numbered apart (plan/fault.h): only rN:VERB#k reaches them, from a model of their own.
  KillModel m = fit(reliableCounts(small), reliableCounts(large),
                    [](const Op& op, const ops::Step&) { return !isRelayLabel(op.process); });
  auto rs = relayCounts(small), rl = relayCounts(large);
  if (!rs.empty() || !rl.empty()) {
    KillModel r = fit(rs, rl, [](const Op& op, const ops::Step& s) { return op.process == "r1" && !relayPoll(s); });
    if (!r.empty()) m.relay_ = std::make_shared<const KillModel>(std::move(r));
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
  if (relay_) j["r1"] = relay_->toJson();
  return j;
}

namespace {

bool streamVerb(const std::string& verb) {
  return verb == "XREADGROUP" || verb == "XREAD" || verb == "XAUTOCLAIM" || verb == "XCLAIM" || verb == "XACK" ||
         verb == "XDEL" || verb == "XPENDING";
}

/// Whether two resources can be the same: equal, or a wildcard of the other's server ("pg:*", "valkey:*").
bool overlap(const std::string& a, const std::string& b) {
  auto wild = [](const std::string& w, const std::string& x) {
    return w.size() > 2 && w.compare(w.size() - 2, 2, ":*") == 0 && x.compare(0, w.size() - 1, w, 0, w.size() - 1) == 0;
  };
  return a == b || wild(a, b) || wild(b, a);
}

} // namespace

std::set<std::string> KillModel::resourcesOf(const ops::Step& step) {
  std::set<std::string> out;
  if (step.server == "pg") {
    for (const auto& t : step.tables) out.insert("pg:" + t);
    if (step.verb == "COMMIT" || step.verb == "END") out.insert("pg:*");
    return out;
  }
  if (step.server == "sink") return {"sink"}; // the provider's calls: a resource of their own
  // The broker's own steps: a read, an acknowledgement, any step of a broker that is not Valkey (a group's
  // join, heartbeat, offset commit: all on the topic and its group).
  if (streamVerb(step.verb) || !step.delivered.empty() || !step.acked.empty() || step.server != "valkey")
    return {"stream"};
  // A transaction or a script may touch any key, the stream's entries included (MULTI, XACK, XDEL, EXEC; a
  // script that marks the event and acknowledges it): it conflicts with every Valkey step.
  static const std::set<std::string> kAnyKey = {"EXEC",     "EVAL",        "EVALSHA", "EVAL_RO",
                                                "EVALSHA_RO", "FCALL", "FCALL_RO"};
  if (kAnyKey.count(step.verb)) return {"valkey:*", "stream"};
  // The key: the command line's second word ("SET seen:abc NX" -> "seen:abc"), up to its last ':'.
  const auto from = step.detail.find(' ');
  if (from == std::string::npos || step.verb == "PING" || step.verb == "MULTI" || step.verb == "INFO") return out;
  const auto to = step.detail.find(' ', from + 1);
  std::string key = step.detail.substr(from + 1, to == std::string::npos ? std::string::npos : to - from - 1);
  if (auto colon = key.rfind(':'); colon != std::string::npos) key.resize(colon + 1);
  if (!key.empty()) out.insert("valkey:" + key);
  return out;
}

std::vector<std::string> KillModel::conflicting(const std::string& held) const {
  std::vector<std::string> out;
  auto h = resources_.find(held);
  if (h == resources_.end()) return out;
  for (const auto& v : order_) {
    auto r = resources_.find(v);
    if (r == resources_.end()) continue;
    bool any = std::any_of(h->second.begin(), h->second.end(), [&](const std::string& a) {
      return std::any_of(r->second.begin(), r->second.end(), [&](const std::string& b) { return overlap(a, b); });
    });
    if (any) out.push_back(v);
  }
  return out;
}

KillModel KillModel::fromLines(const std::vector<std::pair<std::string, VerbLine>>& lines,
                               const std::map<std::string, std::set<std::string>>& resources) {
  KillModel m;
  m.resources_ = resources;
  for (const auto& [verb, line] : lines) {
    if (m.lines_.count(verb)) continue;
    m.order_.push_back(verb);
    m.lines_[verb] = line;
  }
  return m;
}

} // namespace idem
