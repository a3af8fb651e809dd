/// idemproof compare: the matrix of classes x targets on one scenario, its costs, one report.
#include "driver/compare.h"
#include "driver/session.h"
#include "history/trace.h"
#include "plan/fault_kind.h"

#include "core/error.h"
#include "report/shard_section.h"

#include <fmt/format.h>

#include <iostream>
#include <set>

namespace idem {

namespace compare {

std::string terminalTable(const CompareSection& c) {
  size_t w = 8;
  auto cellText = [&](const std::string& cls, const std::string& target) -> std::string {
    const CompareCell* x = c.cell(cls, target);
    if (!x || x->verdict == Verdict::NotApplicable) return "-";
    std::string kinds;
    for (const auto& k : x->kinds) kinds += (kinds.empty() ? "" : ",") + k;
    std::string text = x->verdict == Verdict::Fail ? "FAIL " + kinds : toString(x->verdict);
    if (x->verdict == Verdict::Fail && x->unknown > 0) text += fmt::format(" +{}?", x->unknown); // unknown runs beside the failure
    return text;
  };
  std::vector<std::string> targets;
  for (const auto& t : c.targets) targets.push_back(t.name);
  for (const auto& t : targets) {
    w = std::max(w, std::min<size_t>(t.size(), 24));
    for (const auto& cls : c.classes) w = std::max(w, std::min<size_t>(cellText(cls.id, t).size(), 24));
  }
  std::string out = fmt::format("  {:<34}", "class");
  for (const auto& t : targets) out += fmt::format(" {:<{}}", t.substr(0, w), w);
  while (out.back() == ' ') out.pop_back();
  out += "\n";
  for (const auto& cls : c.classes) {
    out += fmt::format("  {:<34}", cls.label.substr(0, 34));
    for (const auto& t : targets) out += fmt::format(" {:<{}}", cellText(cls.id, t).substr(0, w), w);
    while (out.back() == ' ') out.pop_back();
    out += "\n";
  }
  std::string mps = fmt::format("  {:<34}", "messages/s (fault-free)"), rt = fmt::format("  {:<34}", "round trips/message");
  for (const auto& t : targets)
    for (const auto& x : c.costs)
      if (x.target == t) {
        mps += fmt::format(" {:<{}.1f}", x.msgsPerS, w);
        rt += fmt::format(" {:<{}.1f}", x.roundTripsPerMsg, w);
      }
  while (mps.back() == ' ') mps.pop_back();
  while (rt.back() == ' ') rt.pop_back();
  return out + mps + "\n" + rt + "\n";
}

} // namespace compare

int compareCommand(const CommonArgs& commonIn, const CompareArgs& args) {
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
  Progress progress("compare " + sc.name);
  auto out = compare::compareTargets(session, o, progress);
  progress.clear();

  ReportBuilder report(session.header("compare"));
  report.verdict(out.verdict);
  report.section("compare", out.compare);
  for (auto& r : out.runs) report.addRun(std::move(r));
  if (o.shard) {
    ShardSection shard = shardSection(o.shard->index, o.shard->count, "compare", static_cast<int64_t>(out.compare.cells.size()));
    shard.failOnViolation = args.failOnViolation;
    report.section("shard", shard);
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  report.timings({{"total_ms", ms}, {"schedules", out.schedules}});
  std::string path = report.write(session.reportDir().string(), common.junit);

  int failing = 0, unknown = 0;
  for (const auto& t : out.compare.targets) failing += t.verdict == Verdict::Fail;
  for (const auto& c : out.compare.cells) unknown += c.unknown > 0;
  std::cout << fmt::format("compare {}: {} targets, {} schedule{} per generated class (seed {}), {}{}\n", sc.name,
                           session.targets().size(), o.runs, o.runs == 1 ? "" : "s", o.seed,
                           o.perClass > 0 ? fmt::format("at most {} fault{} per class", o.perClass, o.perClass == 1 ? "" : "s")
                                          : "every fault point",
                           o.shard ? fmt::format("; shard {} (its cells only, the others n/a)", o.shard->str()) : "");
  std::cout << compare::terminalTable(out.compare);
  std::cout << fmt::format("{}: {} of {} targets fail a class; {} schedules, {:.1f} s\n", toString(out.verdict), failing,
                           session.targets().size(), out.schedules, static_cast<double>(ms) / 1000.0);
  if (unknown > 0)
    std::cout << fmt::format("unknown: {} cell{} hold{} schedules that could not be judged (marked unknown, or +N? beside "
                             "a failure): exit 2\n", unknown, unknown == 1 ? "" : "s", unknown == 1 ? "s" : "");
  std::cout << "report: " << (session.reportDir() / "report.html").string() << " (and report.json)\n";
  if (unknown > 0) return 2;
  return args.failOnViolation && out.verdict == Verdict::Fail ? 1 : 0;
}

} // namespace idem
