#pragma once
/// Internal: naming which events went wrong: the story of one event told from the history (sends,
/// deliveries with their steps, kills of the processes holding it, acknowledgements). Which application
/// counts explain a value is checkers/multiplicity.h.
#include "checkers/checkers.h"
#include "checkers/history_view.h"

#include <cstdint>
#include <string>
#include <vector>

namespace idem::detail {

/// What the history says happened to one event, as a clause and the ops it cites.
struct Story {
  std::string text;                 ///< "delivered to c1 (XREADGROUP#1), c1 killed at after:SET#3, ..."
  std::vector<int64_t> ops;         ///< sends, deliveries, kills and acks cited
  std::vector<std::string> entries; ///< the event's stream entries
  std::string kill_point;           ///< the first kill the story mentions, "" when none
};

/// The story of event n. `lost`: mention acknowledgements ("and acknowledged by c2 without effect").
Story eventStory(const HistoryView& h, int n, bool lost);

/// 1 "once", 2 "twice", k "k times".
std::string times(int k);
/// "2", "2 and 4", "1, 2 and 4".
std::string listAnd(const std::vector<std::string>& words);
std::string listNumbers(const std::vector<int>& ns);

/// Adds a story's ops, entries and kill point (the first one wins) to the violation.
void cite(Violation& v, const Story& s);
/// Sorts and removes duplicates of ops, entries, events and candidates.
void tidy(Violation& v);

} // namespace idem::detail
