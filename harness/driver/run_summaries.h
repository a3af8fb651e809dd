#pragma once
/// The run summaries of a check, in index order, spooled to an anonymous temporary file as they are
/// counted, so that idemproof's memory stays flat however many runs a check makes (a summary is ~150
/// bytes; 10,000 of them in memory were ~2 MiB, a million ~200 MiB). Memory keeps only the count and the
/// page's share: the first runs that did not pass or lost a fault. The file has no name (tmpfile): the
/// kernel removes it when idemproof exits, however it exits.
#include "search/case_result.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <vector>

namespace idem {

class RunSummaries {
public:
  /// `pageRuns`: how many runs that did not pass (or lost a fault) to keep in memory beyond the first
  /// (the page lists kPageRuns and says there are more).
  explicit RunSummaries(size_t pageRuns);
  RunSummaries(RunSummaries&&) noexcept = default;
  RunSummaries& operator=(RunSummaries&&) noexcept = default;

  /// Appends the next run's summary (runs arrive in index order).
  void add(const RunSummary& r);
  size_t size() const { return count_; }
  /// The first pageRuns + 1 summaries of runs that did not pass or lost a fault, in order, as JSON.
  const std::vector<nlohmann::json>& notPassed() const { return notPassed_; }
  /// The summary of run position `i` as report.json lists it. Reads the spool in order: call it with
  /// i = 0, 1, 2, ... (once per pass; i = 0 starts a new pass), as a StreamedArray does.
  nlohmann::json at(size_t i);

private:
  struct Close {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Close> file_;
  size_t count_ = 0, pageRuns_ = 0, next_ = 0; ///< next_: the position the next read returns
  bool reading_ = false; ///< the file's last operation was a read: C stdio needs a seek before a write
  std::vector<nlohmann::json> notPassed_;
};

} // namespace idem
