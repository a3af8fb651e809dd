#include "search/search.h"

#include "search/reductions.h"

#include "core/workers.h"

#include <fmt/format.h>
#include <rapidcheck.h>

#include <algorithm>
#include <map>
#include <mutex>

namespace idem {

SearchResult searchCases(size_t n, int workers, const std::function<CaseResult(int, size_t)>& eval,
                         const std::function<bool()>& expired, const OnOutcome& onOutcome) {
  SearchResult res;
  std::mutex mu;
  size_t next = 0, limit = n;
  std::map<size_t, CaseResult> waiting; // finished, not yet passed on: a lower case still runs
  auto passOn = [&] { // under mu: the outcomes that are next in index order and counted
    while (!waiting.empty() && waiting.begin()->first == res.ran && res.ran < limit) {
      if (onOutcome) onOutcome(res.ran, waiting.begin()->second);
      waiting.erase(waiting.begin());
      ++res.ran;
    }
  };
  auto body = [&](int worker) {
    while (true) {
      size_t i;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (next >= limit) return;
        if (expired && expired()) {
          res.outOfTime = true;
          limit = next;
          return;
        }
        i = next++;
      }
      CaseResult o = eval(worker, i);
      std::lock_guard<std::mutex> lock(mu);
      if (i >= limit) continue; // past a failure found meanwhile
      if (o.verdict == Verdict::Fail && (!res.firstFailure || i < *res.firstFailure)) {
        res.firstFailure = i;
        res.failure = o;
        limit = std::min(limit, i + 1);
      }
      waiting.emplace(i, std::move(o));
      passOn();
    }
  };
  onWorkers(std::max(1, std::min<int>(workers, static_cast<int>(std::max<size_t>(n, 1)))), body, [&] {
    std::lock_guard<std::mutex> lock(mu);
    limit = 0;
  });
  if (res.firstFailure) res.outOfTime = false;
  return res;
}

Schedule withoutUnfired(const Schedule& s, const CaseResult& outcome) {
  Schedule out = s;
  std::erase_if(out.faults, [&](const Fault& f) {
    return std::find(outcome.fired.begin(), outcome.fired.end(), f) == outcome.fired.end();
  });
  return out;
}

ShrinkResult shrinkFailure(const rc::Shrinkable<Shape>& start, const CaseResult& startOutcome,
                           const std::function<Schedule(const Shape&)>& materialize, const BatchEval& eval,
                           const ShrinkLimits& limits) {
  ShrinkResult res{start, materialize(start.value()), startOutcome, 0, 0, 0, {}, {}, {}};
  const std::set<std::string> kinds = startOutcome.kinds;
  auto keyOf = [](const Schedule& s) { return nlohmann::json(s).dump(); };
  std::string current = keyOf(res.schedule);
  std::set<std::string> tried{current};
  size_t width = static_cast<size_t>(std::max(1, limits.workers));
  bool progress = true, finalCandidate = false;
  while (progress && !finalCandidate) {
    progress = false;
    auto seq = res.shape.shrinks();
    while (!progress) {
      if (res.runs >= limits.maxRuns) {
        res.stopped = fmt::format("the shrink budget of {} runs is spent", limits.maxRuns);
        return res;
      }
      if (limits.stop && limits.stop()) {
        res.stopped = "interrupted";
        return res;
      }
      if (limits.flakyStartTries == 0 && res.flakyCandidates >= limits.maxFlaky) {
        res.stopped = fmt::format("{} candidates failed once and then passed", res.flakyCandidates);
        return res;
      }
      std::vector<rc::Shrinkable<Shape>> batch;
      std::vector<Schedule> schedules;
      while (batch.size() < width && batch.size() + res.runs < limits.maxRuns) {
        auto next = seq.next();
        if (!next) break;
        Schedule s = materialize(next->value());
        std::string key = keyOf(s);
        if (key == current) { // the same schedule: a step down the tree for free
          res.shape = *next;
          progress = true;
          for (const auto& b : schedules) tried.erase(keyOf(b)); // not run: may come again
          break;
        }
        if (!tried.insert(key).second) continue;
        batch.push_back(*next);
        schedules.push_back(std::move(s));
      }
      if (progress) break;
      if (batch.empty()) { // a local minimum: no shrink of it fails
        // Last, the schedule without the faults that did not fire in the run kept: they changed nothing in
        // it, and a counterexample should not carry them. A candidate as any other, its shape the same.
        Schedule s = withoutUnfired(res.schedule, res.outcome);
        if (finalCandidate || s.faults.size() == res.schedule.faults.size() || !tried.insert(keyOf(s)).second) return res;
        finalCandidate = true;
        batch.push_back(res.shape);
        schedules.push_back(std::move(s));
      }
      auto take = [&](size_t i, const CaseResult& outcome, bool every) { // candidate i goes on from here
        res.shape = batch[i];
        res.schedule = schedules[i];
        res.outcome = outcome;
        res.accepted.push_back(res.schedule);
        res.failedEveryRun.push_back(every);
        res.steps++;
        current = keyOf(res.schedule);
        progress = true;
      };
      const auto same = [&](const CaseResult& o) { return sameFailure(o, kinds); };
      if (limits.flakyStartTries > 0) { // each candidate several times; taken when one of its runs fails
        const size_t tries = static_cast<size_t>(limits.flakyStartTries);
        std::vector<Schedule> runs;
        for (const auto& sc : schedules) runs.insert(runs.end(), tries, sc);
        auto outs = eval(runs);
        res.runs += runs.size();
        for (size_t i = 0; i < batch.size() && !progress; ++i) {
          const auto first = outs.begin() + static_cast<std::ptrdiff_t>(i * tries);
          const auto last = first + static_cast<std::ptrdiff_t>(tries);
          const auto hit = std::find_if(first, last, same);
          if (hit != last) take(i, *hit, std::all_of(first, last, same));
        }
        if (limits.onBatch) limits.onBatch(res.runs, res.steps, res.schedule);
        continue;
      }
      auto outs = eval(schedules);
      res.runs += schedules.size();
      for (size_t i = 0; i < batch.size() && !progress; ++i) {
        if (!same(outs[i])) continue;
        const int confirm = limits.concurrentWork || concurrent(schedules[i]) ? std::max(1, limits.replays) : 1;
        auto again = eval(std::vector<Schedule>(static_cast<size_t>(confirm), schedules[i]));
        res.runs += again.size();
        if (std::all_of(again.begin(), again.end(), same)) take(i, again.back(), true);
        else res.flakyCandidates++;
      }
      if (limits.onBatch) limits.onBatch(res.runs, res.steps, res.schedule);
    }
  }
  return res;
}

} // namespace idem
