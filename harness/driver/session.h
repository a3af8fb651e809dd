#pragma once
/// What every judging command shares: the target and scenario values, the servers (embedded or given),
/// workspaces on them, executing and judging schedules, and the report directory.
#include "checkers/checkers.h"
#include "report/builder.h"
#include "core/temp_dir.h"
#include "scenario/scenario.h"
#include "search/shard.h"
#include "servers/servers.h"
#include "supervisor/workspace.h"
#include "target/manifest.h"

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace idem {

/// Flags common to run, sweep, check, replay, compare.
struct CommonArgs {
  std::vector<std::string> targets;
  std::string scenario = "wallet"; ///< without --scenario: defaultScenario() of the targets
  bool scenarioGiven = false;       ///< --scenario was on the command line
  std::string reportDir;      ///< default reports/latest
  std::string databaseUrl;
  std::string valkeyUrl;
  /// The user's brokers by broker name (--amqp-url: rabbitmq, --nats-url: nats); the others are embedded.
  std::map<std::string, std::string> brokerUrls;
  uint64_t seed = 0;
  bool seedGiven = false;
  int workers = 0;            ///< 0: the cores (at most 16); 1 with external servers
  RunOptions run;
  std::string junit;          ///< --junit FILE
  bool reportDirGiven = false, junitGiven = false; ///< the flag was given (an empty value is then an error)
  /// --scenario-values: run the scenario's default schedule with the values it writes, instead of
  /// decodable ones (scenario/decodable.h); a pass it can't prove is then unknown.
  bool scenarioValues = false;
  /// --faults (sweep, check): the fault kinds to run (plan/fault_kind.h); empty: the command's default.
  std::vector<std::string> faults;
  /// Every worker gets embedded servers of its own (restart faults restart them: another worker's run
  /// must not see it). Set by a command whose schedules hold restart faults; also implied by "restart" in
  /// `faults`.
  bool ownServers = false;
  /// --shard I/N (check, sweep, compare): run only this shard's slice (search/shard.h); unset: all.
  std::optional<Shard> shard;
  /// --sink-policy honour|ignore: the sink's policy for keys, over the scenario's (a scenario with a sink
  /// only); "" keeps the scenario's.
  std::string sinkPolicy;

  /// Servers idemproof does not own take part (--database-url, or a broker's URL): nothing may restart.
  bool userServers() const { return !databaseUrl.empty() || !brokerUrls.empty(); }
};

/// True when a schedule's faults restart a server.
bool restartsServers(const std::vector<Fault>& faults);

/// One executed schedule and its judgement.
struct Judged {
  Schedule schedule;
  History history;
  std::vector<CheckResult> results;
  Verdict verdict = Verdict::Unknown; ///< pass | fail | unknown, or error when it could not be judged
  std::string error; ///< set when the execution could not be judged (an "error" op)
  std::map<std::string, std::string> logs; ///< process label -> its log (kept for runs that did not pass)
  PhaseTimes phases; ///< where its wall time went (Workspace::phases), and "judge": the checkers
  /// The violation kinds of its failing checks.
  std::set<std::string> kinds() const;
  /// The name of the anti-pattern of its first violation that has one ("effect without dedup"), "" when
  /// none is named.
  std::string pattern() const;
};

/// --report names a folder that exists or can be made, writable; --junit a writable file in one. Checked
/// before any server starts, so that a run never ends in a write error. Throws UsageError naming the flag.
void checkOutputs(const CommonArgs& a);

/// The last `maxBytes` of a log file (a consumer may write gigabytes; only the tail is read), with a
/// "[... N bytes cut ...]" line in front when cut; "" when it can't be read.
std::string logForReport(const std::filesystem::path& log, uintmax_t maxBytes = 256 * 1024);

class Session {
public:
  /// Loads the scenario and target(s), checks each implements the scenario, starts or connects to the
  /// servers. Throws UsageError.
  /// `check` runs on the loaded scenario and targets before any server starts (a command's own checks of
  /// its input, so that bad input never costs a server start).
  using BeforeServers = std::function<void(const Scenario&, const std::vector<Target>&)>;
  explicit Session(const CommonArgs& args, const BeforeServers& check = {});
  ~Session();

  const Scenario& scenario() const { return scenario_; }
  const std::vector<Target>& targets() const { return targets_; }
  const ServerEndpoints& servers() const;
  const CommonArgs& args() const { return args_; }
  std::filesystem::path reportDir() const;
  int workers() const;

  /// A workspace for worker `w` of target `t` (its logs go under the session's temp dir). With embedded
  /// servers every workspace but the first has a Valkey of its own, so that each one's consumers find
  /// their stream in database 0: a client that ignores the URL's database (phpredis, a hand-made
  /// connection) would otherwise pass on one worker and fail on the others. Thread-safe: the pool's
  /// workers create theirs at once.
  std::unique_ptr<Workspace> workspace(const Target& t, int w);
  /// Executes and judges one schedule; keeps the logs when `keepLogs` or the verdict is not pass.
  static Judged judge(Workspace& ws, const Scenario& sc, const Schedule& s, bool keepLogs = false);
  /// Writes the kept logs of a judged run into <report>/logs/<prefix>/ and returns label -> path
  /// relative to the report dir.
  std::map<std::string, std::string> writeLogs(const Judged& j, const std::string& prefix);
  /// The one builder of the record a report keeps of a judged run: its logs written under
  /// <report>/logs/<id>/, its history kept when `withHistory`.
  RunRecord record(const Judged& j, const std::string& id, const std::string& target, bool withHistory = true,
                   const std::string& title = "", const std::string& scenario = "");
  /// The report's header: what ran where (command, scenario, targets, seed, servers, options).
  ReportHeader header(const std::string& command) const;

private:
  CommonArgs args_;
  Scenario scenario_;
  std::vector<Target> targets_;
  EmbeddedServersPtr embedded_;
  bool ownServers_ = false;
  std::mutex workspaceMu_; ///< guards own_, workerServers_ and nextWorkspace_
  /// With ownServers_: the servers of each worker of a pool (by its index), shared by its workspaces.
  std::map<int, EmbeddedServers*> workerServers_;
  std::vector<EmbeddedServersPtr> own_; ///< servers of the workspaces' own: a pair each when ownServers_, else a Valkey
  ServerEndpoints external_;
  std::unique_ptr<TempDir> temp_;
  int nextWorkspace_ = 0;
};

/// Whether the scenario named on the command line is of kind http (false also when it can't be read: the
/// session then says why).
bool httpScenario(const std::string& nameOrFile);
/// The scenario a command runs when --scenario is not given: the first one the first target lists that every
/// target implements; `wallet` when they have none in common (the Session then names what each lists). A
/// manifest that can't be read is left for the Session to report.
std::string defaultScenario(const std::vector<std::string>& targets);
/// Whether the scenario `nameOrFile` has a sink (false when it can't be loaded: the Session says why).
bool sinkScenario(const std::string& nameOrFile);

/// The repository's scenarios folder: $IDEMPROOF_SCENARIOS, else <exe dir>/../scenarios, else ./scenarios.
std::filesystem::path scenariosDir();

} // namespace idem
