#pragma once
/// What the client does in an HTTP schedule (scenario kind "http"): a list of requests, each a value. The
/// harness is the only client of the server under test, so it decides every request's timing: whether it
/// waits for the answer, gives up while the server is still working (a client timeout), cuts the
/// connection, or sends several at once on a barrier. docs/http-contract.md, docs/faults.md ("HTTP").
///
/// Events are the request bodies: event n is one payload (its fields, and a fresh `ref` per execution) and
/// one Idempotency-Key (fresh per execution too). A request names the event whose KEY it sends and the event
/// whose BODY it sends: the same event is the original or a retry, another one a key reused with a
/// different payload (a mismatch).
#include <nlohmann/json_fwd.hpp>

#include <cstdint>

#include <string>
#include <vector>

namespace idem {

struct ClientOp {
  enum class Kind {
    Send,   ///< one request
    Burst,  ///< `copies` identical requests on `copies` connections, written at once after a barrier
    NoKey,  ///< the body of `body` without the key header
    BadKey, ///< the body of `body` with a malformed key (`malformed`)
  };
  /// How the client treats the answer of a Send.
  enum class Wait {
    Answer,       ///< reads it (and the server's late answer after a kill: none, the connection is gone)
    Timeout,      ///< gives up once the server's work reaches its COMMIT, which is held there until the next
                  ///< request has its answer: the retry that follows arrives while this one is in flight
    CutRequest,   ///< closes the connection right after writing the request
    CutHeaders,   ///< closes it once the answer's status line and headers arrived
    CutBody,      ///< closes it in the middle of the answer's body
  };
  Kind kind = Kind::Send;
  Wait wait = Wait::Answer;
  int key = 1;    ///< Send, Burst: the event whose Idempotency-Key is sent
  int body = 1;   ///< the event whose payload is sent (!= key: a mismatch)
  int copies = 2; ///< Burst: 2..kMaxBurst
  int other = 0;  ///< Burst: the last copy carries this event's payload instead (0: none): a mismatch in a race
  std::string malformed = "empty"; ///< BadKey: "empty" | "token" (unquoted) | "unterminated" ("\"abc")
  /// Send: written only once the scenario's declared retention_ms has passed since the key's last request
  /// (the key may have been forgotten: a fresh execution is then as right as a replay).
  bool afterRetention = false;
  /// Send: written once this many ms have passed since the key's last request ended (real time, at most
  /// kMaxRetentionWaitMs): within the declared retention_ms the key must still be remembered, from it on
  /// it may be forgotten. 0: at once.
  int64_t agedMs = 0;
  /// Send: the payload's fields in reverse order (the same values): the same payload when the policy's
  /// payload_equivalence is "json" or "form" (it must be replayed), another one under "bytes".
  bool reordered = false;
  /// The server replica the request goes to (1..the schedule's replicas; 0: replica 1). A burst's copies
  /// all go to it, unless `split`.
  int replica = 0;
  /// Burst: copy i goes to replica ((replica or 1) - 1 + i - 1) mod replicas + 1: the burst split across
  /// the replicas, round robin (with one replica, all go to it).
  bool split = false;

  bool operator==(const ClientOp& o) const;
  /// "send 1", "send 1 (timeout)", "send 1 (after retention)", "send 1 (aged 500 ms)", "send 1 (reordered)", "send key 1 body 2", "burst 4 of 1", "burst 4 of 1 +2", "no-key 3",
  /// "bad-key 3 (token)"; " to s2" when it names a replica, " split" for a split burst
  std::string str() const;
  /// str() without where it goes (replica, split).
  std::string plain() const;
  /// The replica copy `copy` (1-based; a send's is 1) goes to, in a run of `replicas` replicas: 1..replicas.
  int replicaOf(int copy, int replicas) const;
};

inline constexpr int kMaxBurst = 16;
/// The most server replicas an HTTP schedule runs (s1..s3).
inline constexpr int kMaxReplicas = 3;
/// The longest retention a request after the retention waits out: a scenario made for it declares less.
inline constexpr int64_t kMaxRetentionWaitMs = 10000;

const char* toString(ClientOp::Kind k); ///< "send" | "burst" | "no-key" | "bad-key"
const char* toString(ClientOp::Wait w); ///< "answer" | "timeout" | "cut-after-request" | "cut-after-headers" | "cut-mid-body"

/// {"op": "send", "key": 1, "body": 1, "wait": "timeout"}, {"op": "send", "key": 1, "after_retention": true},
/// {"op": "send", "key": 1, "aged_ms": 500}, {"op": "send", "key": 1, "reordered": true}, {"op": "burst", "key": 1, "copies": 4, "other": 2},
/// {"op": "no-key", "body": 3}, {"op": "bad-key", "body": 3, "malformed": "token"}, {"op": "send", "key": 1, "replica": 2},
/// {"op": "burst", "key": 1, "copies": 2, "split": true}; defaults are left out.
void to_json(nlohmann::json& j, const ClientOp& op);
/// Throws UsageError "<what>: field '<field>.x': why" for any malformed member.
ClientOp clientOpFromJson(const nlohmann::json& j, const std::string& what, const std::string& field);

} // namespace idem
