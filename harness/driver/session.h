#pragma once
/// What every judging command shares: the target and scenario values, the servers (embedded or given),
/// workspaces on them, executing and judging schedules, and the report directory.
#include "checkers/check.h"
#include "core/temp_dir.h"
#include "scenario/scenario.h"
#include "servers/servers.h"
#include "supervisor/workspace.h"
#include "target/manifest.h"

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace idem {

/// Flags common to run, sweep, check, replay, compare.
struct CommonArgs {
  std::vector<std::string> targets;
  std::string scenario = "wallet";
  std::string reportDir;      ///< default reports/latest
  std::string databaseUrl;
  std::string valkeyUrl;
  uint64_t seed = 0;
  bool seedGiven = false;
  int workers = 0;            ///< 0: min(2, cores)
  RunOptions run;
  std::string junit;          ///< --junit FILE
  /// --scenario-values: run the scenario's default schedule with the values it writes, instead of
  /// decodable ones (scenario/decodable.h); a pass it can't prove is then unknown.
  bool scenarioValues = false;
};

/// One executed schedule and its judgement.
struct Judged {
  Schedule schedule;
  History history;
  std::vector<CheckResult> results;
  Verdict verdict = Verdict::Unknown;
  std::string error; ///< set when the execution could not be judged (an "error" op)
  std::map<std::string, std::string> logs; ///< process label -> its log (kept for runs that did not pass)
};

/// "pass" | "fail" | "unknown" | "error"
std::string verdictWord(const Judged& j);

class Session {
public:
  /// Loads the scenario and target(s), checks each implements the scenario, starts or connects to the
  /// servers. Throws UsageError.
  explicit Session(const CommonArgs& args);
  ~Session();

  const Scenario& scenario() const { return scenario_; }
  const std::vector<Target>& targets() const { return targets_; }
  const ServerEndpoints& servers() const;
  const CommonArgs& args() const { return args_; }
  std::filesystem::path reportDir() const;
  int workers() const;

  /// A workspace for worker `w` of target `t` (its logs go under the session's temp dir).
  std::unique_ptr<Workspace> workspace(const Target& t, int w);
  /// Executes and judges one schedule; keeps the logs when `keepLogs` or the verdict is not pass.
  static Judged judge(Workspace& ws, const Scenario& sc, const Schedule& s, bool keepLogs = false);
  /// Executes `schedules` on up to workers() workspaces in parallel; results in input order.
  std::vector<Judged> judgeAll(const Target& t, const std::vector<Schedule>& schedules,
                               const std::function<void(size_t done)>& progress = {});
  /// Writes the kept logs of a judged run into <report>/logs/<prefix>/ and returns label -> path
  /// relative to the report dir.
  std::map<std::string, std::string> writeLogs(const Judged& j, const std::string& prefix);

private:
  CommonArgs args_;
  Scenario scenario_;
  std::vector<Target> targets_;
  EmbeddedServersPtr embedded_;
  ServerEndpoints external_;
  std::unique_ptr<TempDir> temp_;
  int nextWorkspace_ = 0;
};

/// The repository's scenarios folder: $IDEMPROOF_SCENARIOS, else <exe dir>/../scenarios, else ./scenarios.
std::filesystem::path scenariosDir();

} // namespace idem
