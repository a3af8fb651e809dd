#pragma once
/// Private to report/merge*.cc: the shards of one run, validated and keyed by index (merge.cc), and the
/// pieces every command's merge shares.
#include "report/merge.h"
#include "report/shard_section.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace idem::merge_detail {

using json = nlohmann::json;
/// One shard as merge reads it: its report, and its "shard" section read through its type. Dereferences
/// to the report, as the pointer it wraps.
struct ShardInput {
  const ShardReport* source = nullptr;
  ShardSection shard;
  const ShardReport* operator->() const { return source; }
  const ShardReport& operator*() const { return *source; }
};

/// Shard index -> its report; every index 0..N-1 present once.
using ByIndex = std::map<int, ShardInput>;

/// A run of shard `index` as the merged report holds it: its id tagged with the shard unless `keepId`,
/// its log paths under the shard's folder.
json relocate(json run, int index, bool keepId);

/// Log paths of a "processes" list moved under shard `index`'s folder.
json relocateProcesses(json processes, int index);

/// The merged report's options.workers (the shards' summed) and timings (total_ms summed, the slowest
/// shard's, `schedules`, N), written into `merged`.
void sumShards(const ByIndex& byIndex, int n, int64_t schedules, json& merged);

/// The "merge" section's entry of one shard: index, dir, verdict, runs, folder, counterexample (null).
json shardEntry(int index, const ShardReport& s, int runs);

json mergeCheck(const ByIndex& byIndex, int n);   ///< merge_check.cc
json mergeSweep(const ByIndex& byIndex, int n);   ///< merge_matrix.cc
json mergeCompare(const ByIndex& byIndex, int n); ///< merge_matrix.cc

} // namespace idem::merge_detail
