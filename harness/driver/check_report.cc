/// What a check prints and writes: the verdict rules (fault coverage, flakiness), the counterexample in
/// a readable form, and report.json ("check" section, the counterexample's run and violations).
#include "driver/check.h"

#include "report/html.h"
#include "report/junit.h"
#include "report/shard_section.h"

#include <fmt/format.h>

#include <iostream>

namespace idem {

void decideVerdict(CheckSummary& s) {
  CheckDecision d = decideCheck(s, s.cx ? &*s.cx : nullptr, s.verdict, std::move(s.notes));
  s.verdict = d.verdict;
  s.notes = std::move(d.notes);
}

std::string describeSchedule(const Schedule& s, const Scenario& sc, const std::string& indent) {
  std::string events;
  for (const auto& e : s.events) {
    std::string fields;
    for (const auto& f : sc.fields) {
      if (f.gen == "seq" || f.gen == "uuid" || f.gen == "map" || f.gen == "const") continue;
      auto it = e.fields.find(f.name);
      if (it != e.fields.end()) fields += fmt::format("{}{}={}", fields.empty() ? "" : " ", f.name, it->second);
    }
    events += fmt::format("{}{} ({})", events.empty() ? "" : ", ", e.n, fields);
  }
  if (s.http()) {
    std::vector<std::string> reqs, faults;
    for (const auto& c : s.client) reqs.push_back(c.str());
    for (const auto& k : s.faults) faults.push_back(k.str());
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

void print(const Session& session, const CheckSummary& s, const std::vector<RunRecord>& runs, const std::string& path) {
  std::string cov = s.coverage.text();
  if (s.runs > 0)
    std::cout << fmt::format("  coverage: {} of {} faults fired{}\n", s.coverage.fired(), s.coverage.planned(),
                             cov.empty() ? "" : " (" + cov + ")");
  if (s.cx) {
    const auto& cx = *s.cx;
    std::cout << fmt::format("  counterexample{}: {}\n", cx.flaky ? " (flaky)" : "", cx.schedule.summary());
    std::cout << describeSchedule(cx.schedule, session.scenario(), "    ");
    for (const auto& r : runs)
      for (const auto& c : r.results)
        for (const auto& v : c.violations) std::cout << "    " << violationLine(v) << "\n";
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
  if (s.trace) report.addRun(session.record(*s.trace, "trace", target));
  if (s.firstUnknownRun)
    report.addRun(session.record(*s.firstUnknownRun, fmt::format("run-{}", s.firstUnknownIndex + 1), target));
  report.verdict(s.verdict.value_or(Verdict::Unknown));
  report.interrupted(s.interrupted);
  nlohmann::json cx = nullptr;
  if (s.cx) {
    const auto& c = *s.cx;
    nlohmann::json tried = nlohmann::json::array();
    for (const auto& t : c.tried) tried.push_back({{"what", t.what}, {"summary", t.summary}, {"verdicts", t.verdicts}});
    // Grouped by what a reader asks: what it is, how to replay it, how it shrank, how sure it is, where
    // the search found it.
    cx = {{"schedule", c.schedule}, {"summary", c.schedule.summary()}, {"verdicts", c.verdicts},
          {"file", c.file}, {"replay_command", c.replayCommand},
          {"shrink_steps", c.shrinkSteps}, {"shrink_runs", c.shrinkRuns},
          {"replays", c.replays}, {"flaky", c.flaky}, {"flaky_candidates", c.flakyCandidates},
          {"reduced", c.reduced.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.reduced)}, {"tried", tried},
          {"found", {{"run", c.index + 1}, {"schedule", c.found}, {"summary", c.found.summary()}, {"verdicts", c.foundVerdicts}}}};
  }
  int flaky = (s.cx && s.cx->flaky ? 1 : 0) + static_cast<int>(s.cx ? s.cx->flakyCandidates : 0);
  nlohmann::json check = {
      {"runs", s.runs}, {"runs_requested", s.runsRequested}, {"out_of_time", s.outOfTime},
      {"interrupted", s.interrupted.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.interrupted)},
      {"seed", s.seed}, {"seed_given", s.seedGiven}, {"max_events", s.maxEvents}, {"consumers", {s.minConsumers, s.maxConsumers}}, {"replays", s.replays},
      {"passed", s.passed}, {"failed", s.failed}, {"unknown", s.unknown}, {"errors", s.errors}, {"flaky", flaky},
      {"coverage", s.coverage.toJson()},
      {"coverage_by_kind", s.coverage.byKindJson()},
      {"coverage_summary",
       {{"planned", s.coverage.planned()}, {"fired", s.coverage.fired()}, {"runs_with_kills", s.coverage.runsWithKills},
        {"runs_with_coverage_loss", s.coverage.runsWithLoss}, {"never_fired", s.coverage.neverFired()},
        {"coverage_loss_examples", s.coverageLoss}}},
      {"kill_model", s.model.toJson()},
      {"counterexample", cx},
      {"faults", s.faults},
      {"notes", s.notes}};
  // One summary per run: report.json gets them one at a time (10,000 runs: ~2 MB of text, ~10 MB as
  // JSON); the page lists only runs that did not pass or lost a fault, so it holds at most 101 of them.
  auto& page = check["run_summaries"] = s.runSummaries.notPassed();
  auto item = [&s](size_t i) { return s.runSummaries.at(i); };
  report.streamed({"check", "run_summaries", s.runSummaries.size(), item});
  if (s.shard) {
    ShardSection shard = shardSection(s.shard->index, s.shard->count, "check", s.runsRequested);
    shard.runs = nlohmann::json(page).get<std::vector<RunSummaryEntry>>();
    report.section("shard", shard);
    report.streamed({"shard", "runs", s.runSummaries.size(), item});
  }
  report.section("check", std::move(check));
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
