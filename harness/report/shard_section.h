#pragma once
/// report.json's "shard" section as a typed value (docs/report.md, "shard"): check, sweep and compare
/// write it when run with --shard I/N, and merge reads every shard's back through the same type.
#include "core/verdict.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace idem {

/// One run of a check as its run lists hold it ("shard"."runs", "check"."run_summaries"; written from
/// search/case_result.h, RunSummary::toJson).
struct RunSummaryEntry {
  int64_t run = 0;            ///< 1-based index of the run
  Verdict verdict = Verdict::Unknown;
  std::vector<std::string> planned; ///< the faults planned, text forms
  std::vector<std::string> fired;   ///< those of them that fired
  std::optional<int> processes;     ///< consumers (or HTTP replicas) at once: absent when one
  std::optional<std::vector<std::string>> kinds; ///< violation kinds: absent when none
  std::optional<std::string> reason;             ///< why unknown or error: absent when none

  bool operator==(const RunSummaryEntry&) const = default;
};

struct ShardSection {
  int index = 0; ///< I of --shard I/N
  int count = 1; ///< N
  std::string command; ///< check | sweep | compare
  int64_t items = 0;   ///< what the whole run splits: check's --runs, sweep's faults, compare's cells
  std::optional<std::vector<RunSummaryEntry>> runs; ///< check's: its runs (report.json lists every one)
  std::optional<Verdict> baseline;      ///< sweep's: the verdict of its fault-free run
  std::optional<bool> failOnViolation;  ///< compare's --fail-on-violation

  bool operator==(const ShardSection&) const = default;
};

/// The members every command's shard section has; the caller adds its command's own.
ShardSection shardSection(int index, int count, std::string command, int64_t items);

void to_json(nlohmann::json& j, const RunSummaryEntry& r);
/// Throws nlohmann::json::exception on a missing or mistyped member, std::invalid_argument on a verdict
/// that is none.
void from_json(const nlohmann::json& j, RunSummaryEntry& r);
void to_json(nlohmann::json& j, const ShardSection& s);
/// Throws as from_json of a RunSummaryEntry does; index, count, command and items are required.
void from_json(const nlohmann::json& j, ShardSection& s);

} // namespace idem
