#pragma once
/// Internal: the client's requests and answers of an HTTP run as the HTTP checkers read them
/// (http.cc, http_answers.cc), with the effects per payload reference from the final op.
#include "checkers/checkers.h"
#include "checkers/request_faults.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace idem::detail::http {

struct Req {
  const Op* op = nullptr;
  const ops::Request* r = nullptr;
  const Op* answerOp = nullptr;
  const ops::Response* a = nullptr;
  bool final() const { return a && a->final(); }
  bool ok() const { return final() && a->status >= 200 && a->status < 300; }
  int64_t answeredAt() const { return answerOp ? answerOp->index : INT64_MAX; }
};

/// A count or ledger value a scenario query returned, as a whole number; throws std::runtime_error naming
/// `what` when it is none ("12.5", "abc").
int64_t wholeNumber(const std::string& text, const std::string& what);

struct HttpView {
  const HttpSpec& spec;
  const ops::Plan& plan;
  const std::vector<Op>& ops;                ///< the whole history
  const ops::Initial* initial = nullptr;
  const ops::Final* final = nullptr;
  std::vector<Req> reqs;                     ///< in the order written
  std::map<std::string, int64_t> effects;    ///< ref -> count
  std::map<int, std::string> refs;           ///< event -> its payload's ref
  std::vector<std::string> kills;            ///< kill points that fired
  std::vector<int64_t> killOps;              ///< the history index of each kill that fired
  std::vector<RequestFault> faults;          ///< every fault that fired, with the request it hit
  /// Key -> the payload it is bound to: the one of its payloads that took effect (the first sent of them
  /// when several did: a violation), else the first one sent with it. A key's other payloads are mismatches,
  /// whichever request the client meant as the original (in a race, either payload may win).
  std::map<int, int> bound;
  std::map<int, std::vector<int>> executed;  ///< key -> its payloads that took effect, in the order sent

  HttpView(const HttpSpec& s, const std::vector<Op>& ops, const ops::Plan& p);

  /// A request with a well-formed key (the client's keys are fresh UUIDs, one per key event).
  static bool keyed(const Req& q) { return q.r->keyHeader && q.r->key > 0; }
  int64_t effectsOf(int event) const;
  /// Whether `event` is the payload some key is bound to.
  bool boundPayload(int event) const;
  /// The requests with key `key` and the payload it is bound to.
  std::vector<const Req*> own(int key) const;
  /// The requests with key `key` and another payload than its bound one.
  std::vector<const Req*> mismatches(int key) const;
  /// The first 2xx answer to the key's bound payload, in the order answers arrived.
  const Req* reference(int key) const;
  /// Whether another request with the key ran while `q` did (written before `q`'s answer, answered after
  /// `q` was written).
  bool overlapped(const Req& q) const;
  /// The first COMMIT the server process that served `q` sent while `q` was in flight that PostgreSQL answered
  /// ROLLBACK (its transaction had failed, so nothing of it took effect), or nullptr.
  const ops::Step* failedCommitDuring(const Req& q) const;
  /// The first COMMIT the server process that served `q` sent while `q` was in flight that never reached
  /// PostgreSQL (the process killed or its connection dropped before it, or an error answered in its
  /// place), or nullptr.
  const ops::Step* unsentCommitDuring(const Req& q) const;
  /// Whether a COMMIT the server process that served `q` sent while `q` was in flight took effect.
  bool committedDuring(const Req& q) const;
  /// Whether a hold, a pause or a delay held a server process while `q` was written: it fired before `q`'s
  /// answer, and that process's next step came after `q` was written (or never). What the held process was
  /// doing (an unlock after its answer, say) took that long because of the harness, not the server.
  bool heldWhileWritten(const Req& q) const;
  /// Whether a kill fired while `q` was in flight (after it was written, before its answer).
  bool killedDuring(const Req& q) const;
  /// Whether a fault other than a kill (a dropped connection, an error, a restart, ...) fired at the server
  /// while `q` was in flight: a 5xx may then be the server's honest answer.
  bool faultedDuring(const Req& q) const;
  /// Whether `q`'s 5xx may be the aftermath of a restart, before `q` was answered, of a server that its
  /// server process had sent requests to: a pool hands out the connections it held from before (psycopg_pool
  /// does not check them at its defaults), and each fails once. How many it held the history does not say
  /// (a pool opens connections it has not used yet), so every 5xx of that process after the restart is
  /// excused; a bug that answers 5xx shows in the schedules without a restart.
  bool staleAfterRestart(const Req& q) const;
  std::string killText() const { return kills.empty() ? "" : kills.back(); }
  /// The first step the server process that served `q` sent while `q` was in flight (after it was written,
  /// before its answer) for which `which` holds, or nullptr.
  const ops::Step* serverStepDuring(const Req& q, const std::function<bool(const ops::Step&)>& which) const;
  /// Whether `q` was written once the declared retention had passed (after_retention, or aged_ms at least
  /// retention_ms): the key may have been forgotten, and a fresh execution is as right as a replay.
  bool pastRetention(const Req& q) const {
    return q.r->afterRetention || (q.r->agedMs > 0 && q.r->agedMs >= spec.policy.retentionMs);
  }
  /// Whether `q`'s payload is another one than its key's first under the declared payload_equivalence: a
  /// reordered retry under "bytes".
  bool otherPayload(const Req& q) const { return q.r->reordered && spec.policy.payloadEquivalence == "bytes"; }
};

/// "201 Location /orders/1 {...}": an answer in one short line.
std::string brief(const ops::Response& a);
/// brief(a) beside another answer `b`: when their bodies first differ past what brief() shows, the body is
/// shown around that byte ("...": what is left out), so that two answers never read alike.
std::string briefAgainst(const ops::Response& a, const ops::Response& b);
/// "r1, r3"
/// "r1, r2"; "r1 (s1), r2 (s2)" when they were written to more than one server process (replicas).
std::string ids(const std::vector<const Req*>& qs);
/// A violation of checker "http:INV" on `key` (0: none), citing the requests and their answers.
Violation violation(const HttpView& h, const char* kind, const char* inv, int key, std::string message,
                    std::vector<const Req*> cited);

/// The checkers of the answers (http_answers.cc): http:replay, http:status, http:liveness.
CheckResult checkReplays(const HttpView& h);
CheckResult checkStatuses(const HttpView& h);
CheckResult checkLiveness(const HttpView& h);

/// The declared policy beyond the first answer (http_policy.cc), each adding to one checker's violations:
///  http:replay    a stored 5xx replayed (replay_5xx: executed-after-5xx, replay-mismatch) and a retry in
///                 flight under "wait" (in-flight-rejected, wait-past-lease)
///  http:mismatch  a reordered retry, the same payload or another per payload_equivalence (reordered-rejected,
///                 reordered-accepted)
void checkStored5xx(const HttpView& h, std::vector<Violation>& out);
void checkInFlightWait(const HttpView& h, std::vector<Violation>& out);
void checkReordered(const HttpView& h, std::vector<Violation>& out);

} // namespace idem::detail::http
