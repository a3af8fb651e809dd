#include "driver/pool.h"

#include "core/cleanup.h"
#include "core/workers.h"

#include <mutex>

namespace idem {

WorkerPool::WorkerPool(Session& session, int workers) : session_(session) {
  int n = workers > 0 ? workers : session.workers();
  spaces_.resize(static_cast<size_t>(std::max(1, n)));
  for (auto& w : spaces_) w.resize(session.targets().size());
}

WorkerPool::~WorkerPool() = default;

Judged WorkerPool::judge(int w, size_t t, const Schedule& s, bool keepLogs) {
  if (Cleanup::interrupted()) { // the clean-up took the servers: a run now would start what it stopped
    Judged j;
    j.schedule = s;
    j.verdict = Verdict::Unknown;
    j.error = "not run: interrupted by " + Cleanup::interruptedName();
    return j;
  }
  auto& slot = spaces_.at(static_cast<size_t>(w)).at(t);
  if (!slot) slot = session_.workspace(session_.targets()[t], w); // each worker touches only its own slots
  return Session::judge(*slot, session_.scenario(), s, keepLogs);
}

std::vector<Judged> WorkerPool::judgeAll(const std::vector<Job>& jobs, bool keepLogs,
                                         const std::function<void(size_t, const Judged&)>& done) {
  std::vector<Judged> out(jobs.size());
  std::mutex mu;
  int workers = std::max(1, std::min(size(), static_cast<int>(jobs.size())));
  parallelFor(jobs.size(), workers, [&](int w, size_t i) {
    out[i] = judge(w, jobs[i].target, jobs[i].schedule, keepLogs);
    if (done) {
      std::lock_guard<std::mutex> lock(mu);
      done(i, out[i]);
    }
  });
  return out;
}

std::vector<Judged> WorkerPool::judgeAll(const std::vector<Schedule>& schedules, bool keepLogs,
                                         const std::function<void(size_t, const Judged&)>& done) {
  std::vector<Job> jobs;
  for (const auto& s : schedules) jobs.push_back({0, s});
  return judgeAll(jobs, keepLogs, done);
}

std::vector<int> WorkerPool::againUntilReached(std::vector<Judged>& judged, int runs,
                                               const std::function<bool(const Judged&)>& reached,
                                               const std::function<void(size_t, const Judged&)>& done) {
  std::vector<int> count(judged.size(), 1);
  for (int round = 1; round < runs && !Cleanup::interrupted(); ++round) {
    std::vector<size_t> again;
    for (size_t i = 0; i < judged.size(); ++i)
      if (!reached(judged[i]) && judged[i].verdict != Verdict::Fail) again.push_back(i);
    if (again.empty()) break;
    std::vector<Schedule> schedules;
    for (size_t i : again) schedules.push_back(judged[i].schedule);
    auto more = judgeAll(schedules, false, [&](size_t k, const Judged& j) {
      if (done) done(again[k], j);
    });
    for (size_t k = 0; k < again.size(); ++k) {
      judged[again[k]] = std::move(more[k]);
      count[again[k]]++;
    }
  }
  return count;
}

} // namespace idem
