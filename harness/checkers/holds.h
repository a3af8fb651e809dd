#pragma once
/// The holds of a history (docs/faults.md, `hold:cN:before|after:VERB#k[:…]`), and its pauses
/// (`pause:before|after:VERB#k[:…]`: a hold whose process is stopped, SIGSTOP, until the release wakes it,
/// SIGCONT): where each one fired on the process it held, where it was released and why. One reading, shared by the diagnosis (checkers/
/// interleaving.cc) and the timeline of report.html.
///
/// The history has no record of its own for a release: the supervisor notes it on the held process
/// (supervisor/controller_holds.cc, controller_fire.cc) as "hold <fault> released: <why>" or "hold <fault>
/// released at once: <why>" ("pause <fault> released: …" for a pause, noted once its process is woken).
/// A timed hold (`:MS`) whose time passed is released without a note; its end is then the held step's own
/// op (recorded when its reply came, or when the withheld reply was let through).
#include "history/history.h"

#include <cstdint>
#include <string>
#include <vector>

namespace idem {

struct HoldSpan {
  std::string process;   ///< the held process
  Fault fault;           ///< the hold, as it fired
  bool pause = false;    ///< a pause: the process was stopped (SIGSTOP) while held, and woken at the release
  int64_t fired = 0;     ///< the index of its fault op
  int64_t released = -1; ///< the release note, else the held step's op (a timed hold), else -1 (never released)
  bool noted = false;    ///< `released` is a note that says why
  bool atOnce = false;   ///< released as it fired: the point it waits for had passed
  std::string why;       ///< "c2 reached c2:after:XACK#1", "1000 ms passed", "" when not known
  int64_t heldUs = 0;    ///< from its firing to its release (µs); 0 when never released

  /// "released: c2 reached c2:after:XACK#1", "released at once: …", "released after 1000 ms", "never
  /// released"; `brief` leaves out a parenthesised detail ("… waits on a PostgreSQL lock (pg_stat_activity)…").
  std::string releaseText(bool brief = false) const;
};

/// Every hold and pause that fired, in history order.
std::vector<HoldSpan> holdsOf(const std::vector<Op>& history);

} // namespace idem
