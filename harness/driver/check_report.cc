/// What a check prints and writes: the verdict rules (fault coverage, flakiness), the counterexample in
/// a readable form, and report.json ("check" section, the counterexample's run and violations).
#include "driver/check.h"

#include "report/html.h"
#include "report/check_section.h"
#include "report/junit.h"
#include "report/shard_section.h"

#include <fmt/format.h>

#include <algorithm>

#include <iostream>

namespace idem {

void decideVerdict(CheckSummary& s) {
  CheckDecision d = decideCheck(s, s.cx ? &*s.cx : nullptr, s.verdict, std::move(s.notes));
  s.verdict = d.verdict;
  s.notes = std::move(d.notes);
}

std::string describeSchedule(const Schedule& s, const Scenario& sc, const std::string& indent) {
  std::vector<std::string> shown;
  for (const auto& e : s.events) {
    std::string fields;
    for (const auto& f : sc.fields) {
      if (f.gen == "seq" || f.gen == "uuid" || f.gen == "map" || f.gen == "const") continue;
      auto it = e.fields.find(f.name);
      if (it != e.fields.end()) fields += fmt::format("{}{}={}", fields.empty() ? "" : " ", f.name, it->second);
    }
    shown.push_back(fields);
  }
  // HTTP payloads alike in every field shown differ in their uuid fields (an order's ref), drawn per run.
  std::string events;
  std::vector<std::string> alike;
  for (size_t i = 0; i < s.events.size(); ++i) {
    events += fmt::format("{}{} ({})", events.empty() ? "" : ", ", s.events[i].n, shown[i]);
    if (std::count(shown.begin(), shown.end(), shown[i]) > 1) alike.push_back(std::to_string(s.events[i].n));
  }
  std::vector<std::string> uuids;
  for (const auto& f : sc.fields)
    if (f.gen == "uuid") uuids.push_back(f.name);
  if (s.http()) {
    std::vector<std::string> reqs, faults;
    for (const auto& c : s.client) reqs.push_back(c.str());
    for (const auto& k : s.faults) faults.push_back(k.str());
    if (!alike.empty() && !uuids.empty())
      events += fmt::format(" ({} differ only in {}, drawn per run)", joinWords(alike), joinWords(uuids));
    return fmt::format("{0}payloads: {1}\n{0}requests: {2}\n{0}faults: {3}\n", indent, events, joinWords(reqs),
                       faults.empty() ? "none" : joinWords(faults));
  }
  std::string stream;
  std::set<int> seen;
  int phase = 1;
  for (const auto& e : s.stream) {
    if (e.phase != phase) {
      phase = e.phase;
      stream += fmt::format(" | phase {}:", phase);
    }
    bool retry = !seen.insert(e.event).second;
    stream += fmt::format(" {}{}", e.event, retry ? "(retry)" : "");
  }
  std::vector<std::string> faults;
  for (const auto& k : s.faults) faults.push_back(k.str());
  return fmt::format("{0}events: {1}\n{0}stream:{2}\n{0}faults: {3}; restart {4}\n", indent, events, stream,
                     faults.empty() ? "none" : joinWords(faults), toString(s.restart));
}

namespace {

CounterexampleSection counterexampleOf(const Counterexample& c) {
  CounterexampleSection x;
  x.schedule = c.schedule;
  x.summary = c.schedule.summary();
  x.verdicts = c.verdicts;
  x.file = c.file;
  x.replayCommand = c.replayCommand;
  x.shrinkSteps = c.shrinkSteps;
  x.shrinkRuns = static_cast<int64_t>(c.shrinkRuns);
  x.replays = c.replays;
  x.flaky = c.flaky;
  x.flakyCandidates = static_cast<int64_t>(c.flakyCandidates);
  if (!c.reduced.empty()) x.reduced = c.reduced;
  x.tried = c.tried;
  x.found = {static_cast<int64_t>(c.index + 1), c.found, c.found.summary(), c.foundVerdicts};
  return x;
}

CheckSection checkSectionOf(const CheckSummary& s) {
  CheckSection c;
  c.setCounts(s);
  c.seed = s.seed;
  c.seedGiven = s.seedGiven;
  c.maxEvents = s.maxEvents;
  c.consumers = {s.minConsumers, s.maxConsumers};
  c.replays = s.replays;
  c.flaky = (s.cx && s.cx->flaky ? 1 : 0) + static_cast<int>(s.cx ? s.cx->flakyCandidates : 0);
  c.coverageSummary.lossExamples = s.coverageLoss.get<std::vector<CoverageLossExample>>();
  c.killModel = s.model.toJson();
  if (s.cx) c.counterexample = counterexampleOf(*s.cx);
  c.faults = s.faults;
  c.notes = s.notes;
  // The page lists only runs that did not pass or lost a fault, at most 101 of them; report.json gets
  // every run one at a time (10,000 runs: ~2 MB of text, ~10 MB as JSON).
  c.runSummaries = nlohmann::json(s.runSummaries.notPassed()).get<std::vector<RunSummaryEntry>>();
  return c;
}

void print(const Session& session, const CheckSummary& s, const std::vector<RunRecord>& runs, const std::string& path) {
  std::string cov = s.coverage.text();
  if (s.runs > 0)
    std::cout << fmt::format("  coverage: {} of {} faults fired{}\n", s.coverage.fired(), s.coverage.planned(),
                             cov.empty() ? "" : " (" + cov + ")");
  if (s.cx) {
    const auto& cx = *s.cx;
    std::cout << fmt::format("  counterexample{}: {}\n", cx.flaky ? " (flaky)" : "", cx.schedule.summary());
    std::cout << describeSchedule(cx.schedule, session.scenario(), "    ");
    for (const auto& r : runs) std::cout << resultsText(r.results, "    ", false);
    if (!cx.reduced.empty())
      std::cout << fmt::format("  reduced to a deterministic shape first ({}): the run found was {}\n", cx.reduced,
                               cx.found.summary());
    std::cout << fmt::format("  runs of it: {}\n", joinWords(cx.verdicts));
    std::cout << "  saved: " << cx.file << "\n";
    std::cout << "  replay: " << cx.replayCommand << "\n";
  }
  for (const auto& n : s.notes) std::cout << "  note: " << n << "\n";
  double secs = s.searchMs / 1000.0;
  std::cout << fmt::format("{}: {} runs ({} passed, {} failed, {} unknown, {} errors); {} of {} faults fired; "
                           "search {:.1f} s ({:.1f} schedules/s), total {:.1f} s; seed {}\n",
                           toString(s.verdict.value_or(Verdict::Unknown)), s.runs, s.passed, s.failed, s.unknown, s.errors, s.coverage.fired(),
                           s.coverage.planned(), secs, secs > 0 ? s.runs / secs : 0.0, s.totalMs / 1000.0, s.seed);
  std::cout << "report: " << path << "\n";
  if (s.trace) std::cerr << "idemproof: " << s.trace->error << "\n";
}

} // namespace

std::string reportCheck(Session& session, CheckSummary& s) {
  ReportBuilder report(session.header("check"));
  const std::string target = session.targets().front().name;
  if (s.cx && s.cx->judged) report.addRun(session.record(*s.cx->judged, "counterexample", target));
  else if (s.cx && s.firstFailingRun) // no replay failed again (flaky): the run that did, as the search ran it
    report.addRun(session.record(*s.firstFailingRun, fmt::format("run-{}", s.firstFailingIndex + 1), target));
  if (s.trace) report.addRun(session.record(*s.trace, "trace", target));
  if (s.firstUnknownRun)
    report.addRun(session.record(*s.firstUnknownRun, fmt::format("run-{}", s.firstUnknownIndex + 1), target));
  report.verdict(s.verdict.value_or(Verdict::Unknown));
  report.interrupted(s.interrupted);
  CheckSection check = checkSectionOf(s);
  auto item = [&s](size_t i) { return s.runSummaries.at(i); };
  report.streamed({"check", "run_summaries", s.runSummaries.size(), item});
  if (s.shard) {
    ShardSection shard = shardSection(s.shard->index, s.shard->count, "check", s.runsRequested);
    shard.runs = check.runSummaries;
    report.section("shard", shard);
    report.streamed({"shard", "runs", s.runSummaries.size(), item});
  }
  report.section("check", check);
  if (s.cx) report.schedule(s.cx->schedule);
  if (s.trace) report.error(s.trace->error);
  report.timings({{"total_ms", s.totalMs}, {"search_ms", s.searchMs}, {"shrink_ms", s.shrinkMs},
                  {"schedules", s.runs}, {"workers", s.workers}});
  std::string path = report.write(session.reportDir().string(), session.args().junit);
  std::error_code ec;
  if (!s.cx) std::filesystem::remove(session.reportDir() / "counterexample.json", ec); // a stale one
  print(session, s, report.runs(), path);
  return path;
}

} // namespace idem
