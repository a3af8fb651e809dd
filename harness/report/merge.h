#pragma once
/// `idemproof merge`: the reports of the N shards of one check (each run with --shard I/N, search/shard.h)
/// put back together into the report the unsharded run writes, reading only the shards' report.json.
///
/// Why the result is the unsharded run's: schedule i is drawn from (seed, i) alone, so every shard draws
/// the same schedule i; the unsharded search stops at its lowest failing index f, and every shard runs
/// its own indices in order until its first failure, so every index below f was run by its shard, and
/// the shard holding f found f first and shrank it. The merge therefore keeps the runs up to the lowest
/// failure of all shards (all of them when none failed), recounts verdicts and fault coverage from the
/// shards' per-run lists, and takes that shard's counterexample; the verdict follows check's rules again
/// over the whole (a fail beats an unknown beats a pass). Every shard's counterexample and runs are kept,
/// tagged with their shard.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace idem {

/// One shard: the folder it came from (for messages and log paths) and its report.json.
struct ShardReport {
  std::string dir;
  nlohmann::json report;
};

/// The merged report (command "check", with a "merge" section naming the shards). Throws UsageError with
/// a one-line reason when the shards do not belong together: another command, target, scenario, seed,
/// N or check flags, a report that is not a shard, a shard missing or given twice, kill models that
/// differ. Log paths of the runs are prefixed with `logPrefix(i)` ("shard-I/"), where the caller copies
/// each shard's logs.
nlohmann::json mergeReports(const std::vector<ShardReport>& shards);

/// The exit status of the merged run, as the unsharded command's: check and sweep by the verdict;
/// compare 2 with a cell that holds an unknown schedule, else 1 on a failure with --fail-on-violation, else 0.
int mergedExitStatus(const nlohmann::json& merged);

/// "shard-I/": where the merged report's folder holds shard I's logs and counterexample.
std::string shardFolder(int index);

} // namespace idem
