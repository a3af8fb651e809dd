#include "driver/trace_from.h"

#include "core/error.h"
#include "core/json_file.h"
#include "report/report_file.h"
#include "scenario/decodable.h"

#include <fmt/format.h>

#include <filesystem>

namespace idem {

namespace fs = std::filesystem;

namespace {

/// A report holds logs of its runs beside their histories: a bound of its own, as merge reads shards.
constexpr uintmax_t kTraceReportMaxBytes = uintmax_t(1) << 30;

} // namespace

std::vector<Op> traceFrom(const std::string& path, const Scenario& sc, const Schedule& base, int kills, bool revalue) {
  const fs::path file = reportFileOf(path);
  const std::string what = "--trace-from " + file.string();
  auto refuse = [&](const std::string& why) { return UsageError(fmt::format("{}: {}", what, why)); };
  const nlohmann::json report = readJsonFile(file, what, kTraceReportMaxBytes);
  if (!report.is_object()) throw refuse("not a report of idemproof (no object at the top)");
  const std::string command = report.value("command", "");
  if (command != "run" && command != "sweep")
    throw refuse(fmt::format("a report of {}: the trace comes from a report of run or sweep",
                             command.empty() ? "no command" : command));
  const std::string id = command == "run" ? "run" : "baseline";
  const nlohmann::json* run = nullptr;
  if (report.contains("runs") && report["runs"].is_array())
    for (const auto& r : report["runs"])
      if (r.is_object() && r.value("id", "") == id) run = &r;
  if (!run) throw refuse(fmt::format("it holds no fault-free run (no run with id '{}')", id));
  if (!run->contains("history") || !(*run)["history"].is_array())
    throw refuse("its fault-free run has no history (field 'history' of the run)");
  if (report.value("scenario", "") != sc.name)
    throw refuse(fmt::format("a run of scenario {}, not {}", report.value("scenario", "(none)"), sc.name));
  if (run->value("target", "") != base.target)
    throw refuse(fmt::format("a run of target {}, not {}", run->value("target", "(none)"), base.target));
  const std::string verdict = run->value("verdict", "");
  if (verdict != "pass" && verdict != "fail")
    throw refuse(fmt::format("its fault-free run is {}: the steps of a run that could not be judged are not certain",
                             verdict.empty() ? "without a verdict" : verdict));
  if (!run->contains("schedule")) throw refuse("its fault-free run has no schedule");
  Schedule traced = scheduleFromJson((*run)["schedule"], what);
  if (!traced.faults.empty())
    throw refuse(fmt::format("its run had faults ({}): the trace comes from a run without --crash",
                             traced.faults.front().str()));
  // The same schedule up to its values: the run valued its events for its own faults (none), the sweep
  // for one fault of the kinds it sweeps.
  Schedule revalued = traced;
  revalued.seed = base.seed;
  revalued.target = base.target;
  if (revalue) revalued.values = makeDecodable(sc, revalued, kills);
  if (nlohmann::json(revalued) != nlohmann::json(base))
    throw refuse(traced.summary() == base.summary()
                     ? std::string("its run's events carry other values than this sweep's: take the trace from "
                                   "idemproof run with --scenario-values exactly when this sweep has it")
                     : fmt::format("its run's schedule ({}) is not this sweep's ({}): take the trace from idemproof run "
                                   "with the same --scenario, --events and --seed", traced.summary(), base.summary()));
  try {
    return (*run)["history"].get<std::vector<Op>>();
  } catch (const std::exception& e) {
    throw refuse(fmt::format("field 'history' of its fault-free run: {}", e.what()));
  }
}

} // namespace idem
