#pragma once
/// A target is a folder holding target.json: the consumer under test. See docs/target-contract.md.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace idem {

/// What a reference target is documented to do on one scenario (target.json's "expect"): the demo checks it
/// in every cell, and targets/README.md's table of expectations is generated from it.
struct Expectation {
  std::string verdict;            ///< "pass" or "fail"
  std::vector<std::string> kinds; ///< fail: the violation kinds it must show
  std::string why;                ///< one line: the strategy and why it holds or fails
  /// fail, optional: the anti-pattern id (checkers.h patternName) some failing cell of the demo must name
  std::string pattern = {};
};

struct Target {
  std::filesystem::path dir;      ///< absolute folder of target.json; the command's working directory
  std::filesystem::path manifest; ///< absolute path of target.json
  std::string name;
  std::string kind = "consumer"; ///< "consumer" (docs/target-contract.md) or "http" (docs/http-contract.md)
  /// A consumer's broker: "valkey" (the default) or "kafka" (harness/brokers/kafka/README.md). Read from the
  /// manifest only: runs use Valkey.
  std::string broker = "valkey";
  std::string health;            ///< http: a path answering GET with 2xx once ready ("": PORT accepting is ready)
  std::vector<std::string> command;          ///< argv; a relative argv[0] with a '/' is resolved against dir
  /// The outbox relay's argv ("processes": {"relay": [...]}), resolved as `command`; empty: the target has none.
  /// It runs beside the consumers as process r1 (docs/target-contract.md, "An outbox relay").
  std::vector<std::string> relay;
  /// With a relay: SQL returning one row whose first column counts the outbox's unsent rows ("outbox.pending").
  /// A run is settled only once it returns 0.
  std::string outboxPending;
  std::map<std::string, std::string> env;    ///< added to the consumer's environment after ${VAR} expansion
  std::optional<std::filesystem::path> schema; ///< absolute path of the target's own SQL, if any
  std::vector<std::string> scenarios;
  std::map<std::string, Expectation> expect; ///< scenario -> documented behaviour (reference targets)
  /// scenario -> sink policy -> documented behaviour under that policy, where it differs from `expect`'s
  /// (target.json's "expect": {"payments": {..., "sink_policy": {"ignore": {...}}}}): compare and demo run
  /// a scenario with a sink under both policies (docs/sink.md).
  std::map<std::string, std::map<std::string, Expectation>> expectBySinkPolicy;
  /// How long the consumer keeps what it deduplicates by (`dedup_ttl_ms`: a mark's TTL, the age a retention
  /// job prunes at), passed to it as DEDUP_TTL_MS and to the scenario's prune statement; nullopt: it keeps it
  /// for good (docs/target-contract.md, "Dedup retention").
  std::optional<int64_t> dedupTtlMs;

  bool implements(const std::string& scenario) const;
  /// The documented behaviour on `scenario` under `sinkPolicy` ("" or a policy without its own: `expect`'s).
  /// Throws std::out_of_range when the target documents none for the scenario.
  const Expectation& expected(const std::string& scenario, const std::string& sinkPolicy) const;
};

/// The longest target name (it is printed in every report line).
inline constexpr size_t kMaxNameBytes = 200;

/// Reads DIR/target.json (or DIR when it names a .json file). Throws UsageError naming the file and field:
/// missing manifest, invalid JSON, a key twice, wrong field types, empty command, both or neither of
/// "command" and "processes", a process role other than consumer and relay, a relay without "outbox", missing schema file, a
/// file outside the target's folder (unless "files_outside": true), an "env" variable idemproof sets or the
/// loader's (LD_*: target/target_env.h), more than 1 MiB.
Target loadTarget(const std::filesystem::path& dirOrFile);
/// The same from JSON already read, as the manifest at path `manifest` (its folder is the target's).
Target targetFromJson(const nlohmann::json& j, const std::filesystem::path& manifest);

/// Expands ${VAR} in `text` from `vars`; "$$" is a literal '$'. An unknown variable throws UsageError
/// naming `what`.
std::string expandVars(const std::string& text, const std::map<std::string, std::string>& vars,
                       const std::string& what);

} // namespace idem
