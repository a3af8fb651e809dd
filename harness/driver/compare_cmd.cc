/// idemproof compare: the matrix of classes x targets on one scenario, its costs, one report.
#include "driver/compare.h"
#include "driver/session.h"
#include "history/trace.h"
#include "plan/fault_kind.h"

#include "core/cleanup.h"
#include "core/error.h"
#include "report/shard_section.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <iostream>
#include <set>

namespace idem {

namespace compare {

std::string terminalTable(const CompareSection& c) {
  size_t w = 8;
  auto cellText = [&](const std::string& cls, const CompareTarget& t) -> std::string {
    const CompareCell* x = c.cell(cls, t);
    if (!x || x->verdict == Verdict::NotApplicable) return "-";
    std::string kinds;
    for (const auto& k : x->kinds) kinds += (kinds.empty() ? "" : ",") + k;
    std::string text = x->verdict == Verdict::Fail ? "FAIL " + kinds : toString(x->verdict);
    if (x->verdict == Verdict::Fail && x->unknown > 0) text += fmt::format(" +{}?", x->unknown); // unknown runs beside the failure
    return text;
  };
  // The columns: a target each, or a target under each sink policy (a second header line names it).
  const bool policies = !c.sinkPolicies.empty();
  for (const auto& t : c.targets) {
    w = std::max(w, std::min<size_t>(t.name.size(), 24));
    for (const auto& cls : c.classes) w = std::max(w, std::min<size_t>(cellText(cls.id, t).size(), 24));
  }
  // The first column as wide as the longest class label (a Kafka kill class: "after SYNC_GROUP, before
  // COMMIT_OFFSET"), within reason.
  size_t hw = 34;
  for (const auto& cls : c.classes) hw = std::max(hw, std::min<size_t>(cls.label.size(), 64));
  auto line = [&](const std::string& head, const std::function<std::string(size_t)>& col) {
    std::string out = fmt::format("  {:<{}}", head.substr(0, hw), hw);
    for (size_t i = 0; i < c.targets.size(); ++i) out += fmt::format(" {:<{}}", col(i).substr(0, w), w);
    while (out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line("class", [&](size_t i) { return c.targets[i].name; });
  if (policies) out += line("sink policy", [&](size_t i) { return c.targets[i].sinkPolicy; });
  for (const auto& cls : c.classes) out += line(cls.label, [&](size_t i) { return cellText(cls.id, c.targets[i]); });
  auto costOf = [&](size_t i) -> const CompareCost* {
    for (const auto& x : c.costs)
      if (x.target == c.targets[i].name && x.sinkPolicy == c.targets[i].sinkPolicy) return &x;
    return nullptr;
  };
  out += line("messages/s (fault-free)", [&](size_t i) {
    const auto* x = costOf(i);
    return x ? fmt::format("{:.1f}", x->msgsPerS) : std::string();
  });
  out += line("round trips/message", [&](size_t i) {
    const auto* x = costOf(i);
    return x ? fmt::format("{:.1f}", x->roundTripsPerMsg) : std::string();
  });
  return out;
}

} // namespace compare

int compareCommand(const CommonArgs& commonIn, const CompareArgs& args) {
  Cleanup::ExitHold hold; // interrupted, the comparison still reports the schedules that finished before the signal
  auto t0 = std::chrono::steady_clock::now();
  CommonArgs common = commonIn;
  if (httpScenario(common.scenario))
    for (const auto& k : common.faults) requireHttpFaultKind(k, "--faults");
  if (common.faults.empty()) common.faults = compare::defaultFaultKinds(common);
  Session session(common, [](const Scenario&, const std::vector<Target>& targets) {
    std::set<std::string> names;
    for (const auto& t : targets)
      if (!names.insert(t.name).second)
        throw UsageError(fmt::format("--target: two targets are named '{}' ({}); compare needs distinct names", t.name,
                                     t.manifest.string()));
  });
  const auto& sc = session.scenario();
  compare::Options o;
  o.runs = args.runs;
  o.perClass = args.perClass;
  o.faults = common.faults;
  o.delayMs = sweepDelayMs(common.run.claim_idle_ms);
  o.events = args.events;
  o.seed = common.seed;
  o.shard = common.shard;
  o.sinkPolicies = compare::sinkPoliciesToCompare(sc, common);
  Progress progress("compare " + sc.name);
  auto out = compare::compareTargets(session, o, progress);
  progress.clear();

  ReportBuilder report(session.header("compare"));
  report.verdict(out.verdict);
  report.interrupted(out.interrupted);
  report.section("compare", out.compare);
  for (auto& r : out.runs) report.addRun(std::move(r));
  if (o.shard) {
    ShardSection shard = shardSection(o.shard->index, o.shard->count, "compare", static_cast<int64_t>(out.compare.cells.size()));
    shard.failOnViolation = args.failOnViolation;
    report.section("shard", shard);
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  report.timings({{"total_ms", ms}, {"schedules", out.schedules + out.again}});
  std::string path = report.write(session.reportDir().string(), common.junit);

  int failing = 0, unknown = 0;
  for (const auto& t : out.compare.targets) failing += t.verdict == Verdict::Fail; // columns
  for (const auto& c : out.compare.cells) unknown += c.unknown > 0;
  std::cout << fmt::format("compare {}: {} targets{}, {} schedule{} per generated class (seed {}), {}{}\n", sc.name,
                           session.targets().size(),
                           o.sinkPolicies.empty() ? "" : fmt::format(" under each sink policy ({})", fmt::join(o.sinkPolicies, ", ")),
                           o.runs, o.runs == 1 ? "" : "s", o.seed,
                           o.perClass > 0 ? fmt::format("at most {} fault{} per class", o.perClass, o.perClass == 1 ? "" : "s")
                                          : "every fault point",
                           o.shard ? fmt::format("; shard {} (its cells only, the others n/a)", o.shard->str()) : "");
  std::cout << compare::terminalTable(out.compare);
  std::cout << fmt::format("{}: {} of {} {} fail a class; {} schedules{}, {:.1f} s\n", toString(out.verdict), failing,
                           out.compare.targets.size(), o.sinkPolicies.empty() ? "targets" : "columns (target, sink policy)",
                           out.schedules,
                           out.again ? fmt::format(" ({} runs again of points not reached)", out.again) : "",
                           static_cast<double>(ms) / 1000.0);
  if (!out.interrupted.empty())
    std::cout << fmt::format("interrupted by {}: {} of {} schedules not run (or cut short), counted unknown in their "
                             "cells\n", out.interrupted, out.notRun, out.schedules);
  if (unknown > 0)
    std::cout << fmt::format("unknown: {} cell{} hold{} schedules that could not be judged (marked unknown, or +N? beside "
                             "a failure){}\n", unknown, unknown == 1 ? "" : "s", unknown == 1 ? "s" : "",
                             out.interrupted.empty() ? ": exit 2" : "");
  std::cout << "report: " << (session.reportDir() / "report.html").string() << " (and report.json)\n";
  if (unknown > 0) return 2;
  return args.failOnViolation && out.verdict == Verdict::Fail ? 1 : 0;
}

} // namespace idem
