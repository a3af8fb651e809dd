/// idemproof demo: compares the reference targets (targets/*) on the built-in scenarios on embedded
/// servers, one comparison per scenario, and writes one report with a section per scenario. Each
/// reference target has a documented behaviour (targets/README.md): the demo says whether it held.
#include "driver/compare.h"

#include "report/junit.h"

#include <fmt/format.h>

#include <iostream>
#include <set>

namespace idem {

namespace {

struct Reference {
  const char* target;
  const char* scenario;
  const char* verdict; ///< documented: pass or fail
  const char* kind;    ///< the violation kind a failing one must show
  const char* why;
};

const Reference kReferences[] = {
    {"simple", "wallet", "fail", "duplicate", "no dedup: a retry or a redelivery is applied twice"},
    {"dedup-table", "wallet", "pass", "", "dedup row in the same transaction as the credit"},
    {"dedup-valkey", "wallet", "fail", "lost", "SET NX in Valkey before the credit: a kill in between loses it"},
    {"versioned-guard", "customer-city", "pass", "", "updates only to a higher version"},
    {"versioned-naive", "customer-city", "fail", "stale-version", "unconditional update: an older version can win"},
    {"ship-guarded", "order-shipping", "pass", "", "ships only a paid order; stock only if it changed"},
    {"ship-naive", "order-shipping", "fail", "duplicate", "unconditional: a retry takes stock twice"},
};

const char* kScenarios[] = {"wallet", "customer-city", "order-shipping"};

/// The diagnosis of run `id`: its title and its first violation's message.
std::pair<std::string, std::string> diagnosisOf(const compare::Outcome& out, const std::string& id) {
  for (const auto& r : out.runs) {
    if (r.id != id) continue;
    for (const auto& c : r.results)
      for (const auto& v : c.violations) return {r.title, v.message};
  }
  return {"", ""};
}

} // namespace

int demoCommand(const CommonArgs& common, const DemoArgs& args) {
  auto t0 = std::chrono::steady_clock::now();
  auto targetsDir = scenariosDir().parent_path() / "targets";
  compare::Options o;
  o.runs = args.runs;
  o.perClass = args.perClass;
  o.seed = common.seed;
  Progress progress("demo");
  nlohmann::json sections = nlohmann::json::array(), allTargets = nlohmann::json::array(), header, runs = nlohmann::json::array();
  std::vector<RunRecord> records;
  std::vector<std::string> lines;
  bool asExpected = true, anyFail = false, anyUnknown = false;
  size_t schedules = 0;
  for (const char* name : kScenarios) {
    CommonArgs a = common;
    a.scenario = name;
    a.targets.clear();
    for (const auto& ref : kReferences)
      if (std::string(ref.scenario) == name) a.targets.push_back((targetsDir / ref.target).string());
    Session session(a);
    progress.setLabel(std::string("demo ") + name);
    o.runPrefix = std::string(name) + "/";
    o.scenario = name;
    auto out = compare::compareTargets(session, o, progress);
    if (header.is_null()) header = reportHeader("demo", session, "pass");
    schedules += out.schedules;
    nlohmann::json summary = nlohmann::json::array();
    for (const auto& t : out.compare["targets"]) {
      const Reference* ref = nullptr;
      for (const auto& r : kReferences)
        if (t["name"] == r.target) ref = &r;
      std::string verdict = t["verdict"];
      std::set<std::string> kinds = t["kinds"];
      int unknownCells = t.value("unknown_cells", 0);
      // As documented only when every cell is: the verdict and kind, and no cell that could not be judged.
      bool ok = ref && verdict == ref->verdict && (std::string(ref->kind).empty() || kinds.count(ref->kind)) &&
                unknownCells == 0;
      asExpected = asExpected && ok;
      anyFail = anyFail || verdict == "fail";
      anyUnknown = anyUnknown || verdict == "unknown" || verdict == "error" || unknownCells > 0;
      std::string expected = ref ? fmt::format("{}{}: {}", ref->verdict, *ref->kind ? std::string(" (") + ref->kind + ")" : "", ref->why) : "";
      auto [title, message] = diagnosisOf(out, t.value("example", ""));
      summary.push_back({{"name", t["name"]}, {"verdict", verdict}, {"kinds", kinds}, {"expected", expected}, {"as_expected", ok},
                         {"example", t.value("example", "")}, {"example_title", title}, {"diagnosis", message}});
      allTargets.push_back(t["name"]);
      std::string ks;
      for (const auto& k : kinds) ks += (ks.empty() ? "" : ",") + k;
      std::string what = message.empty() ? "" : title + ": " + message.substr(0, message.find(':'));
      std::string shown = verdict == "fail" ? "FAIL " + ks : verdict;
      if (unknownCells > 0 && verdict != "unknown") shown += fmt::format(" +{} unknown", unknownCells);
      lines.push_back(fmt::format("  {:<15} {:<16} {:<20} {}{}", name, t["name"].get<std::string>(), shown, what,
                                  ok ? "" : "  <- NOT AS DOCUMENTED: " + expected));
    }
    sections.push_back({{"scenario", name}, {"description", session.scenario().description}, {"verdict", out.verdict},
                        {"targets", summary}, {"compare", out.compare}});
    for (auto& r : out.runs) {
      runs.push_back(runJson(r));
      records.push_back(std::move(r));
    }
  }
  progress.clear();
  std::string verdict = anyFail ? "fail" : anyUnknown ? "unknown" : "pass";
  nlohmann::json report = header;
  report["verdict"] = verdict;
  for (const char* k : {"scenario", "scenario_file", "target"}) report.erase(k);
  report["scenarios"] = kScenarios;
  report["targets"] = allTargets;
  report["demo"] = {{"as_expected", asExpected}, {"sections", sections}, {"runs_per_class", o.runs}, {"per_class", o.perClass}};
  report["violations"] = violationsOf(records);
  report["runs"] = runs;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  report["timings"] = {{"total_ms", ms}, {"schedules", schedules}};
  auto dir = common.reportDir.empty() ? std::filesystem::current_path() / "reports" / "latest" : std::filesystem::path(common.reportDir);
  writeReport(dir.string(), report);
  if (!common.junit.empty()) writeJunit(common.junit, report);

  std::cout << "idemproof demo: the reference targets on the built-in scenarios (embedded PostgreSQL and Valkey)\n";
  std::cout << fmt::format("  {:<15} {:<16} {:<20} {}\n", "scenario", "target", "verdict", "first counterexample");
  for (auto l : lines) {
    while (!l.empty() && l.back() == ' ') l.pop_back();
    std::cout << l << "\n";
  }
  std::cout << fmt::format("{} schedules in {:.1f} s: {}\n", schedules, static_cast<double>(ms) / 1000.0,
                           asExpected ? "every reference target behaved as documented (targets/README.md)"
                                      : "some reference target did NOT behave as documented (targets/README.md)");
  std::cout << "report: " << (dir / "report.html").string() << "\n";
  if (anyUnknown) return 2;
  return asExpected ? 0 : 1;
}

} // namespace idem
