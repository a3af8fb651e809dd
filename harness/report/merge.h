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

#include <cstdint>
#include <string>
#include <vector>

namespace idem {

/// One shard: the folder it came from (for messages and log paths) and its report.json.
struct ShardReport {
  std::string dir;
  nlohmann::json report;
};

/// Bounds of what merge reads (merge_read.cc): a shard's report.json holds at most kMergeMaxBytes, its run
/// list at most kMergeMaxRuns entries (check's --runs bound) of at most kMergeMaxRunValues values each,
/// and besides it at most kMergeMaxValues values (the runs with histories, the points, the cells: about
/// 100 MB of a report as idemproof writes it).
inline constexpr uintmax_t kMergeMaxBytes = uintmax_t(1) << 30;
inline constexpr size_t kMergeMaxRuns = 1000000;
inline constexpr size_t kMergeMaxRunValues = 256;
inline constexpr size_t kMergeMaxValues = 4000000;
/// The most shards of one run (search/shard.h, kMaxShards).
inline constexpr int64_t kMergeMaxShards = 10000;

/// Reads the report of the shard in folder `dir` (or the report file `dir` names) within the bounds
/// above, parsing it as it is read, and checks the fields merge reads (checkShardShape). Throws UsageError
/// naming the file and field: no report.json, a report.json that is a symbolic link, invalid JSON, a bound
/// passed, a field of the wrong type or out of range.
ShardReport readShard(const std::string& dir);

/// Throws UsageError naming `what` and the field when `report` is not shaped as the report of a shard of
/// check, sweep or compare: each field merge reads of the right type (and range: a shard index below N),
/// each section of its command there.
void checkShardShape(const nlohmann::json& report, const std::string& what);

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
