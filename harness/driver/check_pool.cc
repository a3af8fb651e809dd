#include "driver/check.h"

#include "search/search.h"

#include <cctype>

namespace idem {

WorkerPool::WorkerPool(Session& session, const Target& target, int workers) : session_(session) {
  for (int w = 0; w < std::max(1, workers); ++w) spaces_.push_back(session.workspace(target, w));
}

Judged WorkerPool::judge(int w, const Schedule& s, bool keepLogs) {
  return Session::judge(*spaces_.at(static_cast<size_t>(w)), session_.scenario(), s, keepLogs);
}

std::vector<Judged> WorkerPool::judgeAll(const std::vector<Schedule>& schedules, bool keepLogs) {
  std::vector<Judged> out(schedules.size());
  parallelFor(schedules.size(), size(), [&](int w, size_t i) { out[i] = judge(w, schedules[i], keepLogs); });
  return out;
}

std::vector<Outcome> WorkerPool::outcomes(const std::vector<Schedule>& schedules) {
  std::vector<Outcome> out(schedules.size());
  parallelFor(schedules.size(), size(), [&](int w, size_t i) { out[i] = outcomeOf(judge(w, schedules[i])); });
  return out;
}

Outcome outcomeOf(const Judged& j) { return classify(j.schedule, j.history.ops(), j.results, j.error); }

RunRecord recordOf(Session& session, const Judged& j, const std::string& id) {
  RunRecord r;
  r.id = id;
  r.target = session.targets().front().name;
  r.verdict = verdictWord(j);
  r.error = j.error;
  r.schedule = j.schedule;
  r.history = j.history.ops();
  r.results = j.results;
  if (!j.logs.empty()) {
    std::string dir = id;
    for (char& c : dir)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '_';
    r.logs = session.writeLogs(j, dir);
  }
  return r;
}

std::string joinWords(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

} // namespace idem
