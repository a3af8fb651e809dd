#pragma once
/// The one append-only history of a schedule's execution. Everything that happened goes here, in the
/// order the harness saw it; checkers and report writers read only this (plus the scenario value).
///
/// Op types and their `value` (all keys are lower-case; absent keys mean "not known"):
///  - "plan"     process "harness":  {"schedule": <Schedule JSON, see plan/schedule.h>, "target": "name",
///                                    "claim_idle_ms": 10, "stream": "key", "group": "name"}   (always op 0)
///  - "initial"  process "harness":  {"observed": {<invariant name>: rows}} read after reset, before any send.
///                rows = [[col, col, ...], ...] as text (SQL NULL as null).
///  - "send"     process "producer": {"entry": "1-0", "n": 2, "event_id": "...", "fields": {..}, "phase": 1,
///                                    "retry": false}
///  - "spawn"    process "c1":       {"pid": 123, "consumer": "c1", "log": "path", "restart": "new-name"|"same-name"|"first"}
///  - "step"     process "c1":       {"server": "pg"|"valkey", "conn": 1, "verb": "COMMIT", "k": 3,
///                                    "detail": "COMMIT", "t_req_us": 123, "error": false,
///                                    "delivered": [{"entry": "1-0", "fields": {..}}],   (reads: XREADGROUP, XAUTOCLAIM, XCLAIM)
///                                    "acked": ["1-0"],                                  (XACK request ids)
///                                    "empty": true,                                     (a read that delivered nothing)
///                                    "outcome": "ok"|"killed-before"|"killed-after"|"forwarded"|"withheld"|"unobserved"}
///                A step is recorded when it ends (docs/steps.md, "How a step ends").
///  - "kill"     process "c1":       {"point": "after:COMMIT#3", "signal": 9}   (only when the signal was delivered)
///  - "note"     process any:        {"message": "..."}   (e.g. a kill point reached that delivered no signal)
///  - "opaque"   process "c1":       {"server": "pg", "conn": 2, "direction": "client"|"server", "offset": 41,
///                                    "reason": "not the PostgreSQL v3 protocol (first bytes: ...)"}
///  - "exit"     process "c1":       {"status": 0} or {"signal": 9}, "by": "harness"|"self"
///  - "stall"    process "harness":  {"pending": 2, "last_delivered": "1-5", "restart": true, "reason": "..."}
///  - "final"    process "harness":  {"observed": {<invariant name>: rows}, "pending": [{"entry","consumer","deliveries"}],
///                                    "undelivered": ["3-0"], "stream": ["1-0", ...], "deadline": false,
///                                    "end": "settled"|"stuck"|"limit", "limit": "deadline"|..., "reason": "..."}
///  - "error"    process "harness":  {"message": "..."}      (the run could not be judged)
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace idem {

struct Op {
  int64_t index = 0;   ///< position in the history, 0-based
  int64_t time_us = 0; ///< microseconds since the history started
  std::string type;
  std::string process;
  nlohmann::json value;
};

void to_json(nlohmann::json& j, const Op& op);
void from_json(const nlohmann::json& j, Op& op);

/// Append-only and thread-safe (proxies append from their I/O thread).
class History {
public:
  History();
  History(const History& o);
  History& operator=(const History& o);
  /// Appends an op stamped with the current time; returns its index.
  int64_t append(std::string type, std::string process, nlohmann::json value);
  /// A copy of every op so far, in order.
  std::vector<Op> ops() const;
  nlohmann::json toJson() const;
  static History fromJson(const nlohmann::json& j);
  int64_t nowUs() const;

private:
  mutable std::mutex mu_;
  std::vector<Op> ops_;
  std::chrono::steady_clock::time_point start_;
};

} // namespace idem
