/// check's counterexample (check.cc): the search's first failure replayed, its deterministic shapes tried,
/// shrunk, and the result replayed again until one fails in every run.
#include "driver/check.h"

#include "core/cleanup.h"
#include "driver/progress.h"
#include "search/reductions.h"
#include "search/search.h"

#include <fmt/format.h>

#include <iostream>
#include <iterator>
#include <set>
#include <utility>

namespace idem {

namespace {

std::vector<Schedule> copies(const Schedule& s, int n) { return std::vector<Schedule>(static_cast<size_t>(std::max(1, n)), s); }

/// A failure of another kind than the one replayed for, seen in every replay: its first run.
struct OtherFailure {
  CaseResult result;
  Judged judged;
};

/// Replays `s` n times; appends each verdict to `verdicts` ("fail" when it is the same failure as `kinds`,
/// "fail:KIND,..." when another) and keeps one replay that is that failure in `judged`. Returns whether
/// every replay was. With `other`: when every replay failed alike with other kinds, the first of them.
bool replayAll(WorkerPool& pool, const Schedule& s, int n, const std::set<std::string>& kinds,
               std::vector<std::string>& verdicts, std::optional<Judged>& judged,
               std::optional<OtherFailure>* other = nullptr) {
  auto js = pool.judgeAll(copies(s, n), true);
  std::vector<CaseResult> os;
  for (const auto& j : js) os.push_back(caseResultOf(j));
  bool consistent = true;
  for (size_t i = 0; i < js.size(); ++i) {
    const CaseResult& o = os[i];
    bool same = sameFailure(o, kinds);
    std::string word = toString(o.verdict);
    if (o.verdict == Verdict::Fail && !same) word += ":" + joinWords({o.kinds.begin(), o.kinds.end()});
    verdicts.push_back(word);
    if (same && !judged) judged = std::move(js[i]);
    consistent = consistent && same;
  }
  if (other && failedAlikeOtherwise(os, kinds)) *other = OtherFailure{os.front(), std::move(js.front())};
  return consistent;
}

} // namespace

Counterexample counterexampleOf(WorkerPool& pool, const Cases& cases, const Materialize& materializeShape,
                                const SearchResult& res, const CaseResult& first, const CheckArgs& args,
                                const ModelParams& params, bool concurrentWork) {
  Counterexample cx;
  cx.index = *res.firstFailure;
  auto shrinkable = cases.at(cx.index);
  cx.found = materializeShape(shrinkable.value());
  std::cout << fmt::format("  run {} fails ({}): {}\n", cx.index + 1, kindsText(first.kinds), cx.found.summary())
            << std::flush;
  bool consistent = replayAll(pool, cx.found, args.replays, first.kinds, cx.replays, cx.judged);
  cx.foundVerdicts = {"fail"};
  cx.foundVerdicts.insert(cx.foundVerdicts.end(), cx.replays.begin(), cx.replays.end());
  cx.schedule = cx.found;
  cx.verdicts = cx.foundVerdicts;
  std::set<std::string> seen{nlohmann::json(cx.found).dump()};
  auto interrupted = [] { return Cleanup::interrupted() != 0; }; // every run after a signal is spoiled
  // The first deterministic shape that failed in every replay with another violation than the run found:
  // taken when none fails every time with the run found's (a bug that is there every time without the
  // concurrency, though not the one the concurrent run showed).
  struct Other {
    Reduction reduction;
    Schedule schedule;
    OtherFailure failure;
    size_t replays = 0;
  };
  std::optional<Other> other;
  CaseResult failure = first; // the failure shrinking keeps
  for (const auto& r : deterministicShapes(shrinkable, params)) {
    if (interrupted()) break;
    Schedule s = materializeShape(r.shape.value());
    if (!seen.insert(nlohmann::json(s).dump()).second) continue; // the same schedule as one replayed already
    std::vector<std::string> verdicts;
    std::optional<Judged> judged;
    std::optional<OtherFailure> otherFailure;
    const bool every = replayAll(pool, s, args.replays, first.kinds, verdicts, judged, other ? nullptr : &otherFailure);
    cx.tried.push_back({r.what, s.summary(), verdicts});
    if (otherFailure) other = Other{r, s, std::move(*otherFailure), verdicts.size()};
    if (!every) continue;
    std::cout << fmt::format("  {}: fails in every replay: {}\n", r.what, s.summary()) << std::flush;
    shrinkable = r.shape;
    cx.reduced = r.what;
    cx.schedule = std::move(s);
    cx.verdicts = cx.replays = verdicts;
    cx.judged = std::move(judged);
    consistent = true;
    break;
  }
  if (!consistent && other && !interrupted()) {
    failure = other->failure.result;
    std::cout << fmt::format("  {}: fails in every replay with another violation ({}; the run found: {}): {}\n",
                             other->reduction.what, kindsText(failure.kinds), kindsText(first.kinds),
                             other->schedule.summary()) << std::flush;
    shrinkable = other->reduction.shape;
    cx.reduced = other->reduction.what;
    cx.otherKinds = kindsText(failure.kinds);
    cx.schedule = std::move(other->schedule);
    cx.verdicts = cx.replays = std::vector<std::string>(other->replays, "fail");
    cx.judged = std::move(other->failure.judged);
    consistent = true;
  }
  cx.flaky = !consistent; // shrunk all the same: a smaller schedule may fail every time
  if (interrupted()) return cx;
  ShrinkLimits limits;
  limits.stop = interrupted;
  limits.workers = pool.size();
  limits.replays = args.replays;
  limits.concurrentWork = concurrentWork;
  if (cx.flaky) limits.flakyStart(); // a candidate that fails in both its runs is replayed --replays times more
  // Shrinking may take minutes: on a terminal, a line tells how far it got (off one, the summary after).
  Progress progress("shrinking");
  limits.onBatch = [&progress](size_t runs, int steps, const Schedule& kept) {
    progress.doneCount(runs);
    progress.setLabel(fmt::format("shrinking, {} step{} taken ({})", steps, steps == 1 ? "" : "s", kept.summary()));
  };
  auto sr = shrinkFailure(shrinkable, failure, materializeShape,
                          [&](const std::vector<Schedule>& ss) { return caseResults(pool, ss); }, limits);
  progress.clear();
  cx.shrinkSteps = sr.steps;
  cx.shrinkRuns = sr.runs;
  cx.flakyCandidates = sr.flakyCandidates;
  std::cout << fmt::format("  shrunk in {} step{} ({} runs{}): {}\n", sr.steps, sr.steps == 1 ? "" : "s", sr.runs,
                           sr.stopped.empty() ? "" : "; stopped: " + sr.stopped, sr.schedule.summary()) << std::flush;
  // Newest first, past those whose runs disagreed; the start stays if none fails every replay (fail or flaky).
  bool toldPassedOver = false;
  for (auto it = sr.accepted.rbegin(); it != sr.accepted.rend() && !interrupted(); ++it) {
    const size_t at = static_cast<size_t>(std::distance(it, sr.accepted.rend())) - 1;
    if (!sr.failedEveryRun.at(at)) {
      if (!std::exchange(toldPassedOver, true))
        std::cout << fmt::format("  smaller schedules failed in only some of their runs (the smallest: {}): not "
                                 "reported\n", it->summary()) << std::flush;
      continue;
    }
    std::vector<std::string> replays;
    std::optional<Judged> judged;
    if (!replayAll(pool, *it, args.replays, failure.kinds, replays, judged)) {
      cx.tried.push_back({"shrunk", it->summary(), replays});
      // Runs idemproof could not carry out say nothing of the target, and those before would err alike.
      const bool erred = std::all_of(replays.begin(), replays.end(), [](const auto& v) { return v == toString(Verdict::Error); });
      std::cout << fmt::format("  replays of the shrunk schedule {} ({}): {}\n", erred ? "ended in errors" : "disagree",
                               joinWords(replays), it->summary()) << std::flush;
      if (erred) break;
      continue;
    }
    cx.schedule = *it;
    const bool concurrentRuns = concurrentWork || concurrent(*it);
    // Its runs while shrinking (with their confirmations, or the tries of a flaky start's candidate).
    cx.verdicts = {"fail"};
    const size_t shrinkRuns = limits.flakyStartTries > 0 ? static_cast<size_t>(limits.flakyStartTries) - 1
                              : concurrentRuns ? static_cast<size_t>(std::max(1, args.replays)) : 1;
    cx.verdicts.insert(cx.verdicts.end(), shrinkRuns, "fail");
    cx.verdicts.insert(cx.verdicts.end(), replays.begin(), replays.end());
    cx.replays = std::move(replays);
    cx.judged = std::move(judged);
    cx.flaky = false;
    break;
  }
  return cx;
}

} // namespace idem
