#pragma once
/// Internal: the sink's side of a history (docs/sink.md) indexed for the sink checkers, their diagnoses and
/// the anti-pattern of a call and a commit in the wrong order: the consumer's CALL steps (what its proxy saw),
/// the sink's call records (what the provider received and did), each record linked to the CALL step that
/// carried it, and the story of one event told with its calls.
#include "checkers/diagnosis.h"
#include "checkers/history_view.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace idem::detail {

/// A consumer's CALL step (server "sink"): its detail is "POST /charges ref=… key=…".
struct CallStep {
  int64_t op = 0;
  std::string process;
  const ops::Step* step = nullptr;
  std::string ref;     ///< the detail's ref= ("" when it has none)
  std::string key;     ///< the detail's key= ("" when it has none)
  bool keyed = false;  ///< the detail carries a key
  bool keyCut = false; ///< the detail was cut short in its key: `key` is a prefix of the one sent
  int64_t callOp = -1; ///< the call record it carried (SinkView::link), -1 when none
};

/// A call the sink received, with the CALL step that carried it (stepOp -1 when no step matches).
struct SinkCall {
  int64_t op = 0;
  const ops::Call* call = nullptr;
  int64_t stepOp = -1;
  std::string process; ///< the process of its step, "" when none
};

struct SinkView {
  /// Indexes the CALL steps and call records of `h` and links them (linkCalls).
  explicit SinkView(const HistoryView& h);

  const HistoryView& h;
  std::vector<CallStep> steps; ///< in history order
  std::vector<SinkCall> calls; ///< in history order
  std::map<std::string, int> eventOf; ///< event id -> event number (every event sent)

  /// The executed calls with `ref`, in order.
  std::vector<const SinkCall*> executions(const std::string& ref) const;
  /// Every call record with `ref`, in order.
  std::vector<const SinkCall*> callsOf(const std::string& ref) const;
  /// The CALL steps with `ref`, in order.
  std::vector<const CallStep*> stepsOf(const std::string& ref) const;
  /// The CALL step fault `f` (at a CALL) acted on: CALL#k of the run, or `process`'s own k-th (cN:CALL#k);
  /// nullptr when none was recorded.
  const CallStep* stepOfFault(const Fault& f, const std::string& process) const;
  const SinkCall* callAt(int64_t op) const;
  const CallStep* stepAt(int64_t op) const;
  /// Who made call `c`, as the patterns tell it: "c1 at CALL#2", or "a caller" when no step carried it.
  std::string caller(const SinkCall& c) const;
  /// The same of a CALL step: "c1 at CALL#2".
  static std::string caller(const CallStep& st);
  /// The ops that show call `c`: the CALL step that carried it (when one did), then the sink's record.
  static std::vector<int64_t> opsOf(const SinkCall& c);
  /// The event id of event n ("" when it was never sent).
  std::string idOf(int n) const;
  /// "event 2 (event_id '…')": how the sink checkers name an event; for an id no event carries,
  /// "ref '…' (no event sent carries it)".
  std::string label(const std::string& ref) const;
};

/// The CALL step that carried each call record of `history`: record op index -> step op index. Each record,
/// in the order the sink received them, goes to a CALL step (server "sink") not yet linked that reached the
/// sink (or was answered in its place) with the record's ref and whose request was complete before the sink
/// decided: one with the same key first (a key cut short in the detail: its prefix); then the first recorded
/// after the record (the sink records a call as it decides, before its answer leaves; a step is recorded
/// when it ends, its answer held or not), else the last recorded before it (a request handed on after its
/// connection ended). The report's timeline draws the same links.
std::map<int64_t, int64_t> linkCalls(const std::vector<Op>& history);
/// The ref= and key= of a CALL step's detail ("POST /charges ref=… key=…", either order); `keyed` false without a
/// key; `keyCut` when the detail was cut short in the key (`key` is then the prefix it kept, without "...").
void callDetail(const std::string& detail, std::string& ref, std::string& key, bool& keyed, bool& keyCut);

/// "call 3 (executed, execution 2)", "call 4 (replayed execution 2)", "call 5 (mismatch, 422)".
std::string callText(const ops::Call& c);

/// The story of the event with id `ref` with its calls, in history order: its sends when it was sent more
/// than once, its deliveries, the CALL steps carrying it and what the sink did with each, the kills and
/// other faults of a process while it held the event, and its first acknowledgement:
///   "delivered to c1 (XREADGROUP#1), c1 called at CALL#1 (call 1: executed, execution 1), c1 killed at
///    after:CALL#1, redelivered to c2 (XAUTOCLAIM#1), c2 called again at CALL#2 (call 2: executed,
///    execution 2), acknowledged by c2 (XACK#1)"
/// Its kill_point is the first fault point it tells (a kill, a drop, an error).
Story sinkStory(const SinkView& s, const std::string& ref);

} // namespace idem::detail
