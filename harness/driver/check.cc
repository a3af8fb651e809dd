/// idemproof check: one fault-free trace of the target (its steps, learned as a KillModel), then the class sweep
/// (search/classes.h: one kill at each (when, verb)) and schedules generated from the pure model (search/model.h)
/// with the seed, on every worker (search/search.h); the first failure is confirmed by replays, shrunk with
/// RapidCheck's shrink tree, replayed again and saved as a schedule file with the command that replays it.
#include "driver/check.h"
#include "driver/compare.h"
#include "driver/progress.h"
#include "supervisor/broker_registry.h"

#include "core/cleanup.h"
#include "core/error.h"
#include "checkers/checkers.h"
#include "history/trace.h"
#include "plan/fault_kind.h"
#include "scenario/decodable.h"
#include "search/classes.h"
#include "search/model.h"
#include "search/reductions.h"
#include "search/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <random>
#include <set>
#include <utility>
#include <unistd.h>

namespace idem {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

int64_t msSince(Clock::time_point t0) { return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count(); }

} // namespace

bool learnModel(WorkerPool& pool, const Scenario& sc, const Target& t, CheckSummary& sum) {
  Schedule large = defaultSchedule(sc);
  large.target = t.name;
  int largeEntries = static_cast<int>(large.stream.size());
  Schedule small = large;
  if (sc.http) { // each payload once under its own key, and the first alone: the steps of executed requests
    large.client.clear();
    for (const auto& e : large.events) large.client.push_back(ClientOp{ClientOp::Kind::Send, ClientOp::Wait::Answer, e.n, e.n});
    largeEntries = static_cast<int>(large.events.size());
    small = large;
    small.events = {large.events.front()};
    small.client = {large.client.front()};
  } else {
    large.values = makeDecodable(sc, large, 0);
    for (auto& e : large.stream) e.phase = 1;
    small = large;
    small.events = {large.events.front()};
    small.stream = {{small.events.front().n, 1}};
  }
  // Both at once on two workers: another worker's Valkey db adds a SELECT step (KillModel::reliableCounts).
  auto both = pool.judgeAll(std::vector<Schedule>{large, small});
  Judged &jl = both[0], &js = both[1];
  for (const Judged* j : {&jl, &js}) {
    if (j->error.empty()) continue;
    sum.notes.push_back(fmt::format("the fault-free trace run ({}) could not be judged: {}", j->schedule.summary(), j->error));
    sum.trace = *j;
    return false;
  }
  sum.model = KillModel::learn(js.history.ops(), 1, jl.history.ops(), largeEntries);
  sum.concurrentWork = concurrentWork(jl.history.ops());
  if (!sc.http)
    for (const auto& p : compare::classifySlowWorkPoints(jl.history.ops()))
      if (!p.also.empty()) sum.slowWork.push_back({p.fault.verb, p.fault.k, p.also.front().verb, p.also.front().k});
  if (jl.verdict == Verdict::Fail)
    sum.notes.push_back("the scenario's default schedule fails even without faults (see `idemproof run`)");
  if (sum.model.empty()) sum.notes.push_back("the trace run recorded no step: no kill point can be generated");
  return true;
}

namespace {

/// Saves the counterexample and builds the command that replays it.
void save(Session& session, const CommonArgs& common, const CheckArgs& args, Counterexample& cx) {
  fs::create_directories(session.reportDir());
  fs::path file = session.reportDir() / "counterexample.json";
  nlohmann::json j = cx.schedule;
  j["target"] = fs::absolute(session.targets().front().dir).lexically_normal().string();
  std::ofstream(file) << j.dump(2) << "\n";
  cx.file = file.string();
  cx.replayCommand = fmt::format("idemproof replay {} --target {}", shellQuote(cx.file), shellQuote(common.targets.front()));
  const auto& scArg = common.scenario;
  if (args.scenarioGiven && (scArg.find('/') != std::string::npos || scArg.find(".json") != std::string::npos))
    cx.replayCommand += " --scenario " + shellQuote(scArg);
  if (!common.sinkPolicy.empty()) cx.replayCommand += " --sink-policy " + common.sinkPolicy; // the provider it failed against
  cx.replayCommand += timingFlags(common.run);
}

/// The search: the cases of this shard (all of 0..runs-1 unsharded), in index order, until the first
/// failure or the time budget. Tallies the outcomes, the fault coverage and the first runs that lost a
/// kill point into `sum`. The result's firstFailure is a case index (not a position in the shard), and
/// `failing` its outcome.
SearchResult search(WorkerPool& pool, const Cases& cases, const Materialize& materializeShape,
                    const CheckArgs& args, Clock::time_point t0, CheckSummary& sum, std::optional<CaseResult>& failing) {
  bool tty = ::isatty(STDERR_FILENO);
  std::atomic<size_t> done{0};
  std::mutex mu;
  std::map<size_t, nlohmann::json> losses; // run index -> what did not fire: the 5 lowest indices only
  // A signal ends the search like the time budget (no run starts after it), and a run that was still going
  // when it came is not counted, nor is any after it: the clean-up pulled its servers and processes away.
  auto expired = [&] {
    return Cleanup::interrupted() != 0 || (args.timeBudget.count() > 0 && Clock::now() - t0 > args.timeBudget);
  };
  std::set<size_t> spoiled; // cases whose run ended after a signal
  bool cut = false;         // a spoiled case was reached: no later one counts
  auto tSearch = Clock::now();
  const std::vector<size_t> items = shardItems(static_cast<size_t>(args.runs), sum.shard.value_or(Shard{}));
  // Each run's history is dropped once judged (but the first unknown run's): the counted runs reach
  // `sum` in index order as compact summaries.
  auto counted = [&](size_t p, const CaseResult& o) {
    {
      std::lock_guard<std::mutex> lock(mu); // spoiled is written by the workers
      cut = cut || spoiled.count(items[p]) > 0;
    }
    if (cut) return;
    sum.runSummaries.add(RunSummary::of(items[p], o));
    sum.coverage.add(o.planned, o.fired, o.processes);
    switch (o.verdict) {
    case Verdict::Pass: sum.passed++; break;
    case Verdict::Fail: sum.failed++; break;
    case Verdict::Unknown: sum.unknown++; break;
    case Verdict::Error: sum.errors++; break;
    case Verdict::Flaky: // verdicts of several runs, never of one schedule's run
    case Verdict::NotApplicable: sum.unknown++; break;
    }
    if ((o.verdict == Verdict::Unknown || o.verdict == Verdict::Error) && sum.firstProblem.empty())
      sum.firstProblem = o.reason;
  };
  auto res = searchCases(items.size(), pool.size(), [&](int w, size_t p) {
    const size_t i = items[p];
    Schedule s = materializeShape(cases.at(i).value());
    Judged j = pool.judge(w, 0, s);
    CaseResult o = caseResultOf(j);
    std::lock_guard<std::mutex> lock(mu);
    if (Cleanup::interrupted()) {
      spoiled.insert(i);
      return o;
    }
    if ((o.verdict == Verdict::Unknown || o.verdict == Verdict::Error) &&
        (!sum.firstUnknownRun || i < sum.firstUnknownIndex)) {
      sum.firstUnknownRun = std::move(j);
      sum.firstUnknownIndex = i;
    } else if (o.verdict == Verdict::Fail && (!sum.firstFailingRun || i < sum.firstFailingIndex)) {
      sum.firstFailingRun = std::move(j);
      sum.firstFailingIndex = i;
    }
    if (o.coverageLoss() && (losses.size() < 5 || i < losses.rbegin()->first)) {
      std::vector<std::string> missed;
      for (const auto& p : o.planned)
        if (std::find(o.fired.begin(), o.fired.end(), p) == o.fired.end()) missed.push_back(p.str());
      losses[i] = {{"run", i + 1}, {"schedule", s.summary()}, {"not_fired", missed}};
      if (losses.size() > 5) losses.erase(std::prev(losses.end()));
    }
    if (tty) { // the carriage return rewrites the line: written past std::cerr, which escapes it (core/terminal.h)
      std::fprintf(stderr, "\r  searching: %zu/%zu schedules", ++done, items.size());
      std::fflush(stderr);
    }
    return o;
  }, expired, counted);
  if (tty) {
    std::fprintf(stderr, "\r%48s\r", "");
    std::fflush(stderr);
  }
  sum.searchMs = msSince(tSearch);
  const size_t countedRuns = sum.runSummaries.size(); // res.ran less the runs a signal spoiled
  sum.runs = static_cast<int>(countedRuns);
  sum.outOfTime = res.outOfTime && !Cleanup::interrupted();
  if (res.firstFailure && *res.firstFailure >= countedRuns) { // spoiled by the signal: no failure of the target
    res.firstFailure.reset();
    res.failure.reset();
  }
  res.ran = countedRuns;
  // The cases that ran are the shard's items up to the position of the last one counted.
  auto ran = [&](size_t i) { return res.ran > 0 && i <= items[res.ran - 1]; };
  for (const auto& [i, loss] : losses)
    if (ran(i)) sum.coverageLoss.push_back(loss);
  if (sum.firstUnknownRun && !ran(sum.firstUnknownIndex)) sum.firstUnknownRun.reset(); // past a failure
  if (sum.firstUnknownRun) {
    sum.firstProblem = fmt::format("run {}, {}: {}", sum.firstUnknownIndex + 1, sum.firstUnknownRun->schedule.summary(),
                                   caseResultOf(*sum.firstUnknownRun).reason);
  }
  if (res.firstFailure) {
    failing = res.failure;
    res.firstFailure = items[*res.firstFailure];
  }
  if (!res.firstFailure || sum.firstFailingIndex != *res.firstFailure) sum.firstFailingRun.reset();
  return res;
}

} // namespace

std::vector<std::string> defaultCheckFaults(const CommonArgs& common, const CheckArgs& args) {
  // Every kind that acts at a step and applies: restarts only on servers idemproof owns, holds only with
  // several consumers, a kind that needs a broker's feature only on a broker that has it.
  const std::string broker = common.targets.empty() ? "" : loadTarget(common.targets.front()).broker;
  std::vector<std::string> out;
  for (const auto& k : stepFaultKinds()) {
    const FaultKind& kind = faultKind(k, "--faults");
    if (!kind.drawnByDefault() || (!kind.brokerFeature().empty() && !brokerHas(broker, kind.brokerFeature()))) continue;
    if ((k != "restart" || !common.userServers()) && (k != "hold" || args.maxConsumers >= 2)) out.push_back(k);
  }
  return out;
}

ModelParams checkParams(const CommonArgs& common, const CheckArgs& args) {
  ModelParams params;
  params.maxEvents = args.maxEvents;
  // Holds are drawn as holds (with two consumers or more); the other kinds at the kill draws' points.
  params.faultKinds.clear();
  for (const auto& k : common.faults)
    if (k != "hold") params.faultKinds.push_back(k);
  if (params.faultKinds.empty()) params.maxKills = 0;
  const bool holds = std::count(common.faults.begin(), common.faults.end(), "hold") > 0;
  params.maxHolds = holds ? params.maxHolds : 0;
  params.delayMs = sweepDelayMs(common.run.claim_idle_ms);
  params.minConsumers = args.minConsumers;
  params.maxConsumers = args.maxConsumers;
  params.minReplicas = args.minReplicas;
  params.maxReplicas = args.maxReplicas;
  params.holdMs = std::max(100, 5 * common.run.claim_idle_ms); // past CLAIM_IDLE_MS: the entries become claimable
  return params;
}

int checkCommand(const CommonArgs& commonIn, const CheckArgs& argsIn) {
  // Interrupted, the check still writes its report of the runs that finished before the signal.
  Cleanup::ExitHold hold;
  auto t0 = Clock::now();
  CommonArgs common = commonIn;
  if (!common.seedGiven) {
    std::random_device rd;
    common.seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }
  CheckArgs args = argsIn;
  const bool http = httpScenario(common.scenario); // reads the scenario's file: once
  if (http ? args.consumersGiven : args.replicasGiven)
    throw UsageError(http
                         ? fmt::format("--consumers: scenario {} is an HTTP one: it runs server replicas (--replicas), "
                                       "not consumers", common.scenario)
                         : fmt::format("--replicas: scenario {} is a consumer one: it runs --consumers, not server "
                                       "replicas", common.scenario));
  if (http) { // an HTTP endpoint: server replicas, faults at their steps
    // Kills unless --faults names the kinds, so that a seed draws the schedules it always drew.
    for (const auto& k : common.faults) requireHttpFaultKind(k, "--faults", args.maxReplicas);
    if (common.faults.empty()) common.faults = {"kill"};
    args.minConsumers = args.maxConsumers = 1;
  } else {
    args.minReplicas = args.maxReplicas = 1;
  }
  if (common.faults.empty()) common.faults = defaultCheckFaults(common, args);
  const bool holds = std::count(common.faults.begin(), common.faults.end(), "hold") > 0;
  if (holds && args.maxConsumers < 2 && !http)
    throw UsageError("--faults: hold needs several consumers at once (--consumers 2, or a range such as 1-2)");
  Session session(common);
  const auto& sc = session.scenario();
  const auto& target = session.targets().front();
  CheckSummary sum;
  sum.target = target.name;
  sum.targetDir = common.targets.front();
  sum.scenario = sc.name;
  sum.seed = common.seed;
  sum.seedGiven = common.seedGiven;
  sum.runsRequested = args.runs;
  sum.maxEvents = args.maxEvents;
  sum.minConsumers = args.minConsumers;
  sum.maxConsumers = args.maxConsumers;
  sum.replays = args.replays;
  sum.shard = common.shard;
  sum.faults = common.faults;
  WorkerPool pool(session);
  sum.workers = pool.size();
  std::cout << fmt::format("check {} × {}: seed {}{}, {} runs{} of 1..{} {}, {} {}{}, {} workers\n", target.name,
                           sc.name, sum.seed, sum.seedGiven ? "" : fmt::format(" (random: --seed {} repeats it)", sum.seed),
                           args.runs, sum.shard ? fmt::format(" (shard {}: every {}th from run {})", sum.shard->str(),
                                                              sum.shard->count, sum.shard->index + 1) : "",
                           sc.http ? ModelParams{}.maxRequests : args.maxEvents, sc.http ? "requests" : "events",
                           sc.http ? (args.minReplicas == args.maxReplicas ? std::to_string(args.minReplicas)
                                                                           : fmt::format("{}..{}", args.minReplicas, args.maxReplicas))
                           : args.minConsumers == args.maxConsumers ? std::to_string(args.minConsumers)
                                                                    : fmt::format("{}..{}", args.minConsumers, args.maxConsumers),
                           sc.http ? "server replica" : "consumer", (sc.http ? args.maxReplicas : args.maxConsumers) == 1 ? "" : "s",
                           sum.workers)
            << std::flush;
  bool learned = false;
  try {
    learned = learnModel(pool, sc, target, sum);
  } catch (const std::exception&) { // a worker's servers could not start: the clean-up of a signal took them
    if (!Cleanup::interrupted()) throw;
  }
  if (!learned) {
    sum.interrupted = Cleanup::interruptedName();
    if (!sum.interrupted.empty()) { // its run was cut short by the signal, not by the target
      sum.trace.reset();
      sum.notes = {interruptedNote(sum)};
    }
    sum.verdict = sum.interrupted.empty() ? Verdict::Error : Verdict::Unknown;
    sum.totalMs = msSince(t0);
    reportCheck(session, sum);
    return exitStatus(*sum.verdict);
  }
  ModelParams params = checkParams(common, args);
  params.leaseMs = sc.http ? sc.http->policy.leaseMs : 0;   // delays drawn past the lease (model.h)
  params.callTimeoutMs = sc.sink ? sc.sink->timeoutMs : 0; // and past a sink's call timeout
  params.slowWork = sum.slowWork;
  params.slowWorkMs = compare::kSlowWorkMs;
  const auto gen = shapeGen(sc, sum.model, params);
  Materialize materializeShape = [&](const Shape& s) {
    Schedule x = materialize(s, sc, sum.model, sum.seed, params);
    x.target = target.name;
    return x;
  };
  // The class sweep first (search/classes.h), then the random schedules of the seed.
  std::vector<Shape> classes = args.noClassSweep ? std::vector<Shape>{} : classShapes(sc, sum.model, params);
  const std::string classLine = classSweepLine(classes, static_cast<size_t>(args.runs), sc.http.has_value());
  const Cases cases(gen, std::move(classes), params, sum.seed);
  if (cases.classes() > 0) std::cout << "  " << classLine << "\n" << std::flush;
  // The class sweep draws one kind (the first of --faults; a delay for HTTP): runs that end within it draw
  // no other.
  const std::string swept = sc.http ? "delay" : params.faultKinds.empty() ? "" : params.faultKinds.front();
  std::vector<std::string> others;
  std::copy_if(params.faultKinds.begin(), params.faultKinds.end(), std::back_inserter(others), [&](auto& k) { return k != swept; });
  if (cases.classes() >= static_cast<size_t>(args.runs) && !others.empty())
    sum.notes.push_back(fmt::format("--runs {} ends within the class sweep ({} classes, each a {}): no random schedule "
                                    "runs, so no fault of {} is drawn; raise --runs past {} or pass --no-class-sweep",
                                    args.runs, cases.classes(), swept, joinWords(others), cases.classes()));
  std::optional<CaseResult> failing;
  SearchResult res;
  try {
    res = search(pool, cases, materializeShape, args, t0, sum, failing);
  } catch (const std::exception&) { // as above: only what was counted before the signal stands
    if (!Cleanup::interrupted()) throw;
    sum.runs = static_cast<int>(sum.runSummaries.size());
  }
  const bool shrinking = res.firstFailure && !Cleanup::interrupted();
  if (shrinking) {
    auto tShrink = Clock::now();
    sum.cx = counterexampleOf(pool, cases, materializeShape, res, *failing, args, params, sum.concurrentWork);
    if (!sum.cx->otherKinds.empty())
      sum.notes.push_back(fmt::format("the run found ({}) did not fail every time; its deterministic shape \"{}\" "
                                      "failed every time with another violation ({}): it is the counterexample",
                                      kindsText(failing->kinds), sum.cx->reduced, sum.cx->otherKinds));
    sum.shrinkMs = msSince(tShrink);
    if (!Cleanup::interrupted()) save(session, common, args, *sum.cx);
  }
  sum.interrupted = Cleanup::interruptedName();
  if (!sum.interrupted.empty() && res.firstFailure) {
    sum.cx.reset(); // its replays and shrink steps were cut short: what they say is not the target's
    sum.notes.push_back(fmt::format("run {} failed ({}) before the interruption; {}: run the check again",
                                    *res.firstFailure + 1, kindsText(failing->kinds),
                                    shrinking ? "the interruption cut its replays and its shrinking short"
                                              : "it was not replayed nor shrunk"));
  }
  sum.totalMs = msSince(t0);
  decideVerdict(sum);
  reportCheck(session, sum);
  return exitStatus(*sum.verdict);
}

CaseResult caseResultOf(const Judged& j) { return classify(j.schedule, j.history.ops(), j.results, j.error); }

std::vector<CaseResult> caseResults(WorkerPool& pool, const std::vector<Schedule>& schedules) {
  std::vector<CaseResult> out;
  for (const auto& j : pool.judgeAll(schedules)) out.push_back(caseResultOf(j));
  return out;
}

std::string kindsText(const std::set<std::string>& kinds) { return joinWords({kinds.begin(), kinds.end()}); }

std::string joinWords(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

} // namespace idem
