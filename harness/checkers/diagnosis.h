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
/// When processes worked on the event at once, it ends with the interleaving (below).
Story eventStory(const HistoryView& h, int n, bool lost);

/// How processes worked at once on a delivery of an event of `a` and one of `b` (`a == b`: the same
/// event, its retries included): for each pair of processes whose work overlapped (each had it in hand,
/// unacknowledged and alive, when the other did), the steps of both in history order, numbered per
/// process as a fault names them (`c2 COMMIT#1` is c2's own first COMMIT, `c2:before:COMMIT#1`), at most
/// 12, and the holds that acted on either meanwhile:
///   "c1 and c2 both worked on event 2 at once: c1 SELECT#3, c2 SELECT#1, c1 INSERT#3, c2 INSERT#1, …
///    (c1 held at hold:c1:before:COMMIT#3, released: c2 reached c2:after:INSERT#1)"
///   "c1 worked on event 3 and c2 on event 1 at once: …"
/// The text is "" when no two processes worked on them at once; ops cite the steps, holds and releases.
/// (interleaving.cc)
Story interleaving(const HistoryView& h, const std::vector<int>& a, const std::vector<int>& b);

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
