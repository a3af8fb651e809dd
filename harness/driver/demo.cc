/// idemproof demo: compares the reference targets (targets/*, those whose target.json says what they are
/// expected to do) on the built-in scenarios on embedded servers, one comparison per scenario, and writes
/// one report with a section per scenario. A target behaves "as documented" only when its verdict and kinds
/// are the ones its manifest expects and no cell of it holds a schedule that could not be judged.
#include "driver/compare.h"
#include "history/trace.h"
#include "plan/fault_kind.h"
#include "supervisor/broker_registry.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <iostream>
#include <optional>
#include <set>
#include <thread>

namespace idem {

namespace {

/// The targets of one section of the demo: one scenario's, on brokers whose runs mostly wait
/// (brokerRunsMostlyWait) or on the others.
struct Reference {
  std::string scenario;
  std::vector<Target> targets;
  /// The broker of a section whose runs mostly wait on its timers ("kafka"), "" for the others.
  std::string broker;
  /// Its runs mostly wait on a broker's timers: many at once, beside the others.
  bool waiting() const { return !broker.empty(); }
};

/// The reference targets: every folder of targets/ whose manifest has expectations, by scenario (in the
/// order of scenarios/, wallet first); a scenario's targets on a broker whose runs mostly wait make a
/// section of their own, after the scenario's other one.
std::vector<Reference> referenceTargets(const std::filesystem::path& dir) {
  std::map<std::string, std::vector<Target>> byScenario;
  std::vector<std::filesystem::path> folders;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (std::filesystem::exists(e.path() / "target.json", ec)) folders.push_back(e.path());
  std::sort(folders.begin(), folders.end());
  for (const auto& f : folders) {
    Target t = loadTarget(f);
    for (const auto& [scenario, x] : t.expect) byScenario[scenario].push_back(t);
  }
  std::vector<std::string> order;
  if (byScenario.count("wallet")) order.push_back("wallet");
  for (const auto& [sc, ts] : byScenario)
    if (sc != "wallet") order.push_back(sc);
  std::vector<Reference> out;
  for (const auto& sc : order) {
    Reference others{sc, {}, ""};
    std::map<std::string, Reference> waiting; // by broker
    for (const auto& t : byScenario[sc]) {
      if (t.kind == "consumer" && brokerRunsMostlyWait(t.broker)) {
        auto& w = waiting.try_emplace(t.broker, Reference{sc, {}, t.broker}).first->second;
        w.targets.push_back(t);
      } else {
        others.targets.push_back(t);
      }
    }
    if (!others.targets.empty()) out.push_back(std::move(others));
    for (auto& [b, w] : waiting) out.push_back(std::move(w));
  }
  if (out.empty()) throw UsageError(fmt::format("{}: no target folder says what it expects (\"expect\")", dir.string()));
  return out;
}

/// The diagnosis of run `id`: its title and its first violation's message.
std::pair<std::string, std::string> diagnosisOf(const compare::Comparison& out, const std::string& id) {
  for (const auto& r : out.runs) {
    if (r.id != id) continue;
    for (const auto& c : r.results)
      for (const auto& v : c.violations) return {r.title, v.message};
  }
  return {"", ""};
}

/// One scenario's comparison, as the demo's report and output show it.
struct Section {
  std::optional<ReportHeader> header;
  nlohmann::json json;            ///< the report's demo.sections[i]
  std::vector<std::string> targets, lines;
  std::vector<RunRecord> records;
  bool asExpected = true, anyFail = false, anyUnknown = false;
  size_t schedules = 0;
};

/// Compares `targets` on scenario `name` (servers of its own) and judges each against its manifest's
/// expectation.
Section runSection(const CommonArgs& common, const DemoArgs& args, compare::Options o, const Reference& ref,
                   Progress& progress) {
  const std::string& name = ref.scenario;
  const std::vector<Target>& targets = ref.targets;
  Section out;
  CommonArgs a = common;
  if (a.faults.empty()) {
    a.faults = compare::defaultFaultKinds(a);
    // A section of one broker also shows the kinds only that broker has (rebalance), each once.
    if (!ref.broker.empty())
      for (const auto& k : faultKinds()) {
        const std::string feature = faultKind(k, "demo").brokerFeature();
        if (!feature.empty() && brokerHas(ref.broker, feature)) a.faults.push_back(k);
      }
  }
  // Runs that mostly wait: eight per core, sixteen at most, unless --workers says how many (their CPU is the
  // same; with eight in all, the Kafka section, 3 s of a group's first join in each run, ended the demo 50 s
  // after the other lanes, docs/benchmarks.md). Their two-consumer family is the broker's own (rebalance):
  // the race classes, whose holds wait on a group that rebalances around the held member, run in compare.
  if (ref.waiting()) {
    if (a.workers == 0) a.workers = static_cast<int>(std::clamp(8 * std::thread::hardware_concurrency(), 8u, 16u));
    o.races = false;
  }
  o.faults = a.faults;
  a.scenario = name;
  if (!sinkScenario(name)) a.sinkPolicy.clear(); // --sink-policy is for the scenarios with a sink
  a.targets.clear();
  for (const auto& t : targets) a.targets.push_back(t.dir.string());
  Session session(a);
  // An HTTP scenario's classes are client behaviours whose payload values change nothing: one schedule
  // each (a stuck-key cell waits out the lease).
  o.runs = session.scenario().http ? std::min(1, args.runs) : args.runs;
  out.header = session.header("demo");
  o.runPrefix = name + "/";
  o.scenario = name;
  o.sinkPolicies = compare::sinkPoliciesToCompare(session.scenario(), a); // a scenario with a sink: both
  auto cmp = compare::compareTargets(session, o, progress);
  out.schedules = cmp.schedules + cmp.again; // every run, a point run again included
  nlohmann::json summary = nlohmann::json::array();
  for (const auto& t : cmp.compare.targets) {
    const Target& ref = *std::find_if(targets.begin(), targets.end(), [&](const Target& x) { return x.name == t.name; });
    const Expectation& want = ref.expected(name, t.sinkPolicy); // a column under a sink policy: its own
    const std::string verdict = toString(t.verdict);
    const std::set<std::string>& kinds = t.kinds;
    // As documented only when every cell is: the verdict and kinds, and no cell that could not be judged.
    bool ok = verdict == want.verdict && t.unknownCells == 0 &&
              std::all_of(want.kinds.begin(), want.kinds.end(), [&](const std::string& k) { return kinds.count(k); });
    // The anti-pattern it documents: named by some violation of a failing schedule of it (an id no
    // classifier has never is). Any violation, not only a cell's first: a producer retry applied twice may
    // come first in the schedule whose kill between ACK and COMMIT also lost an event.
    const std::string wantPattern = want.pattern.empty() ? "" : patternName(want.pattern);
    std::set<std::string> patterns;
    for (const auto& r : cmp.runs)
      if (r.target == t.name && r.schedule.sinkPolicy == t.sinkPolicy && r.verdict == Verdict::Fail)
        for (const auto& c : r.results)
          for (const auto& v : c.violations)
            if (v.pattern) patterns.insert(v.pattern->name);
    if (!want.pattern.empty()) ok = ok && !wantPattern.empty() && patterns.count(wantPattern);
    out.asExpected = out.asExpected && ok;
    out.anyFail = out.anyFail || t.verdict == Verdict::Fail;
    out.anyUnknown = out.anyUnknown || t.verdict == Verdict::Unknown || t.verdict == Verdict::Error || t.unknownCells > 0;
    std::string kindsWanted;
    for (const auto& k : want.kinds) kindsWanted += (kindsWanted.empty() ? "" : ", ") + k;
    std::string expected = fmt::format("{}{}{}: {}", want.verdict, kindsWanted.empty() ? "" : " (" + kindsWanted + ")",
                                       want.pattern.empty() ? "" : ", anti-pattern " + want.pattern, want.why);
    auto [title, message] = diagnosisOf(cmp, t.example);
    summary.push_back({{"name", t.name}, {"verdict", verdict}, {"kinds", kinds}, {"expected", expected},
                       {"as_expected", ok}, {"example", t.example}, {"example_title", title},
                       {"diagnosis", message}, {"patterns", patterns}});
    if (!t.sinkPolicy.empty()) summary.back()["sink_policy"] = t.sinkPolicy;
    if (std::find(out.targets.begin(), out.targets.end(), t.name) == out.targets.end()) out.targets.push_back(t.name);
    std::string ks;
    for (const auto& k : kinds) ks += (ks.empty() ? "" : ",") + k;
    std::string what = message.empty() ? "" : title + ": " + message.substr(0, message.find(':'));
    std::string shown = t.verdict == Verdict::Fail ? "FAIL " + ks : verdict;
    if (t.unknownCells > 0 && t.verdict != Verdict::Unknown) shown += fmt::format(" +{} unknown", t.unknownCells);
    out.lines.push_back(fmt::format("  {:<15} {:<22} {:<20} {}{}", name, t.column(), shown, what,
                                    ok ? "" : "  <- NOT AS DOCUMENTED: " + expected));
  }
  const std::string description = ref.broker.empty() ? session.scenario().description
                                                     : fmt::format("{} (targets on {})", session.scenario().description,
                                                                   brokerTitle(ref.broker));
  out.json = {{"scenario", name}, {"description", description},
              {"verdict", toString(cmp.verdict)}, {"targets", summary}, {"compare", cmp.compare}};
  out.records = std::move(cmp.runs);
  return out;
}

} // namespace

int demoCommand(const CommonArgs& common, const DemoArgs& args) {
  auto t0 = std::chrono::steady_clock::now();
  auto references = referenceTargets(scenariosDir().parent_path() / "targets");
  compare::Options o;
  o.runs = args.runs;
  o.perClass = args.perClass;
  o.racePerClass = 1; // each race schedule runs several processes and waits on holds: one point per class
  o.delayMs = sweepDelayMs(common.run.claim_idle_ms);
  o.seed = common.seed;
  if (!args.full) {
    o.leaveOut = DemoArgs::kFamilyRepeats;
    o.startOnce = true; // the kills before a process's first delivery are one family
  }
  Progress progress("demo");
  // Three lanes at once, each on servers of its own: the HTTP sections (an HTTP schedule mostly waits: a
  // server's start, a client's retry pacing, a lease running out), the sections whose runs mostly wait on a
  // broker's timers (several runs per core), and the other stream sections, which keep the cores busy. Each
  // section's fault-free baselines still run one at a time within it.
  enum class Lane { Stream, Http, Waiting };
  auto laneOf = [](const Reference& r) {
    return r.targets.front().kind == "http" ? Lane::Http : r.waiting() ? Lane::Waiting : Lane::Stream;
  };
  std::vector<std::optional<Section>> done(references.size());
  auto runAll = [&](Lane lane) {
    for (size_t i = 0; i < references.size(); ++i)
      if (laneOf(references[i]) == lane) done[i] = runSection(common, args, o, references[i], progress);
  };
  auto httpSections = std::async(std::launch::async, runAll, Lane::Http);
  auto waitingSections = std::async(std::launch::async, runAll, Lane::Waiting);
  try {
    runAll(Lane::Stream);
  } catch (...) {
    httpSections.wait(); // their sessions end before this one's error leaves
    waitingSections.wait();
    throw;
  }
  httpSections.get();
  waitingSections.get();

  nlohmann::json sections = nlohmann::json::array();
  std::vector<std::string> allTargets, scenarios, lines;
  std::vector<RunRecord> records;
  std::optional<ReportHeader> header;
  bool asExpected = true, anyFail = false, anyUnknown = false;
  size_t schedules = 0;
  for (size_t i = 0; i < references.size(); ++i) {
    Section& s = *done[i];
    if (!header) header = s.header;
    if (std::find(scenarios.begin(), scenarios.end(), references[i].scenario) == scenarios.end())
      scenarios.push_back(references[i].scenario);
    sections.push_back(std::move(s.json));
    allTargets.insert(allTargets.end(), s.targets.begin(), s.targets.end());
    lines.insert(lines.end(), s.lines.begin(), s.lines.end());
    for (auto& r : s.records) records.push_back(std::move(r));
    asExpected = asExpected && s.asExpected;
    anyFail = anyFail || s.anyFail;
    anyUnknown = anyUnknown || s.anyUnknown;
    schedules += s.schedules;
  }
  progress.clear();
  header->scenario.clear();
  header->scenarios = scenarios;
  header->targets = allTargets;
  ReportBuilder report(*header);
  report.verdict(anyFail ? Verdict::Fail : anyUnknown ? Verdict::Unknown : Verdict::Pass);
  report.section("demo", {{"as_expected", asExpected}, {"sections", sections}, {"runs_per_class", args.runs},
                          {"per_class", args.perClass}});
  for (auto& r : records) report.addRun(std::move(r));
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  report.timings({{"total_ms", ms}, {"schedules", schedules}});
  auto dir = common.reportDir.empty() ? std::filesystem::current_path() / "reports" / "latest" : std::filesystem::path(common.reportDir);
  report.write(dir.string(), common.junit);

  std::set<std::string> brokers;
  for (const auto& r : references)
    for (const auto& t : r.targets)
      if (t.kind == "consumer") brokers.insert(t.broker);
  std::string servers = "PostgreSQL";
  for (const auto& b : brokers) servers += ", " + brokerTitle(b);
  std::cout << "idemproof demo: the reference targets on the built-in scenarios (embedded servers: " << servers << ")\n";
  std::cout << fmt::format("  {:<15} {:<22} {:<20} {}\n", "scenario", "target", "verdict", "first counterexample");
  for (auto l : lines) {
    while (!l.empty() && l.back() == ' ') l.pop_back();
    std::cout << l << "\n";
  }
  std::cout << fmt::format("{} schedules in {:.1f} s: {}\n", schedules, static_cast<double>(ms) / 1000.0,
                           asExpected ? "every reference target behaved as its target.json expects (targets/README.md)"
                                      : "some reference target did NOT behave as its target.json expects");
  if (!args.full)
    std::cout << "each fault family ran once per target; idemproof demo --full runs the complete matrix\n";
  std::cout << "report: " << (dir / "report.html").string() << "\n";
  if (anyUnknown) return 2;
  return asExpected ? 0 : 1;
}

} // namespace idem
