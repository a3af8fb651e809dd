#pragma once
/// Shards: one run of check, sweep or compare split over N processes (CI matrix jobs, Kubernetes Indexed
/// Job pods) that share nothing but their flags. Shard I of N takes the items i (schedule index for
/// check, fault point for sweep, cell for compare) with i % N == I, in order. Striding, not contiguous
/// blocks: every shard sees early and late indices, so a failure near the start stops each shard about as
/// soon as the unsharded run would, and shards of random schedules take about the same time. An item's
/// content never depends on the shard (check draws schedule i from (seed, i) alone), so the union of
/// the N slices is exactly the unsharded run; `idemproof merge` (report/merge.h) puts them back together.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace idem {

struct Shard {
  int index = 0; ///< 0-based: 0..count-1
  int count = 1;
  bool contains(size_t i) const { return count <= 1 || static_cast<int>(i % static_cast<size_t>(count)) == index; }
  std::string str() const; ///< "I/N"
};

/// The largest N of --shard I/N.
inline constexpr int kMaxShards = 10000;

/// The items of [0, n) in `shard`, ascending.
std::vector<size_t> shardItems(size_t n, const Shard& shard);

/// Parses --shard: "I/N" (0 <= I < N <= kMaxShards), or "auto/N", where I comes from the environment:
/// JOB_COMPLETION_INDEX (a Kubernetes Indexed Job's pod, 0-based) or else CI_NODE_INDEX (GitLab's
/// `parallel:`, 1-based, so 1..N is shard 0..N-1). `env` looks a variable up (std::getenv in the CLI),
/// so the function stays pure. Throws UsageError naming --shard and what is wrong.
Shard parseShard(const std::string& text, const std::function<std::optional<std::string>(const std::string&)>& env);

} // namespace idem
