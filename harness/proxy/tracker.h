#pragma once
/// Protocol trackers: pure, byte-in / message-out decoders of one connection's two directions, in the
/// style of Envoy's protocol filters. They never touch a socket. The proxy feeds the unconsumed bytes of
/// a direction; the tracker reports the size of the next complete message and what it means for steps.
///
/// A *step* is one request/response round trip of a consumer: PostgreSQL — a simple Query, or an
/// extended-protocol group closed by Sync (or Flush); Valkey — one command. Its verb is the first keyword
/// of the statement (for Bind/Execute of a prepared statement, the verb of the statement it executes) or
/// the command name, upper case; HTTP (the sink) — one request, verb CALL.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem::proxy {

enum class Decode {
  Message,      ///< `out` describes one complete message of out.size bytes at the start of the buffer
  NeedMoreData, ///< the buffer holds only part of a message; nothing consumed
  Invalid,      ///< the bytes cannot be this protocol; the proxy passes the rest through unobserved
};

/// A stream entry as a read reply shows it.
struct EntryView {
  std::string id;
  std::vector<std::pair<std::string, std::string>> fields;
};

struct StepInfo {
  std::string verb;     ///< "COMMIT", "XREADGROUP", "PARSE" (prepare-only round trip), "SYNC", ...
  std::string detail;   ///< the SQL text or the command line, abbreviated to ~200 bytes
  std::vector<std::string> acked = {}; ///< XACK: the entry ids in the request
  bool blocking = false;          ///< XREADGROUP/XREAD/BLPOP/... with BLOCK: the reply may take long
  /// PostgreSQL: an extended-protocol group ended by Flush, not Sync (after an error the server skips to
  /// the client's next Sync, so no ReadyForQuery ends its reply).
  bool flushed = false;
  /// Valkey: MULTI, a command queued after it, or DISCARD. What the server's transaction holds hangs on
  /// their replies, so no error fault answers one in the server's place (an EXEC takes one: the server
  /// is sent DISCARD instead, and the client told EXECABORT).
  bool inMulti = false;
  /// The broker's own push (a delivery to a subscription), not a request of the client's: set by the hub.
  bool pushed = false;
  /// PostgreSQL: the tables its statements read or write (sqlTables of the SQL it executes).
  std::vector<std::string> tables = {};
  /// A read of the broker's entries (XREADGROUP, XREAD, XAUTOCLAIM, XCLAIM; a Kafka Fetch): it may deliver
  /// entries, and does no work by itself.
  bool read = false;
  /// The server sends no reply to it (a NATS publish: an acknowledgement, a consumer's own publish): the
  /// step ends as soon as the proxy hands its request on, with an empty reply.
  bool oneWay = false;
  /// A blocking read the broker may hold for its whole wait although an entry arrived meanwhile (the
  /// embedded Kafka broker answers a Fetch at its max wait): that wait in ms; 0 when the broker answers a
  /// blocking read as soon as there is something to read (Valkey's BLOCK, a NATS pull).
  int64_t waitMs = 0;
  /// It only keeps a session alive (Kafka's Heartbeat): no work of the consumer, so it never counts as
  /// progress for the stall rule (a consumer that heartbeats while work it will never do is left is idle).
  bool keepAlive = false;
  /// It only sets up the consumer's session (an AMQP prefetch, a queue or exchange declared or bound): no read
  /// and no work. A client that reconnects after its connection was cut replays such steps on its own (the
  /// RabbitMQ Java client's recovery): they leave it reconnecting, not working (supervisor/liveness.h).
  bool configures = false;
  /// Entries handed back for redelivery (an AMQP nack or reject with requeue, a NATS -NAK): the consumer
  /// says it did not apply them.
  std::vector<std::string> returned = {};
  /// Its `acked` entries are settled without being applied: the broker drops them (an AMQP nack or reject
  /// without requeue, a NATS +TERM). Settled as by an acknowledgement; told apart in a diagnosis.
  bool discards = false;
  /// It may read or settle the broker's entries in a way the proxy cannot see (a script run on Valkey: EVAL,
  /// EVALSHA, FCALL): what it delivered or acknowledged, if anything, is unknown.
  bool unseen = false;
  /// A Lua script on Valkey (EVAL, EVALSHA, SCRIPT LOAD): its SHA-1, the name EVALSHA calls it by.
  std::string script = {};
  /// The stream commands the script's body calls (proxy/resp_script.h scriptStreamCalls), where the step
  /// carries the body (EVAL, SCRIPT LOAD): the run's EVALSHA steps of the same SHA-1 call them too.
  std::vector<std::string> scriptCalls = {};
  /// A script's keys and arguments that look like entry ids (EVAL, EVALSHA): what it may acknowledge.
  std::vector<std::string> scriptIds = {};
  /// XGROUP DELCONSUMER: the consumer name it deletes from the group, with its pending entries.
  std::string deletesConsumer = {};
};

struct ReplyInfo {
  bool error = false;      ///< ErrorResponse / RESP error
  /// The error is one a broker answers of itself while the membership of a group changes (Kafka's
  /// REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, a coordinator moving): a client may retry
  /// it, or exit on it and be replaced.
  bool transient = false;
  bool empty_read = false; ///< a read (XREADGROUP, XREAD, XAUTOCLAIM, XCLAIM) that delivered no entry
  /// A script's reply (StepInfo::unseen) holding what looks like an entry id: it may have handed entries to
  /// its client unseen.
  bool mayCarryEntries = false;
  std::vector<EntryView> delivered; ///< entries a read delivered (XAUTOCLAIM: the claimed ones)
  /// Delivered entries the step itself acknowledged before it read them again (MULTI: XACK, then a read the
  /// group's position had been set back for, at EXEC): pending again, the reader's to settle.
  std::vector<std::string> reheld;
  /// XCLAIM or XAUTOCLAIM … JUSTID: the ids it claimed, without their fields (the client fetches them by id,
  /// XRANGE): the claimant holds them, but nothing of them was delivered yet.
  std::vector<std::string> claimedIds;
  /// XRANGE, XREVRANGE: the ids of the entries it returned. No delivery (the group's state is untouched);
  /// after a JUSTID claim of the same entry, how the claimant gets it.
  std::vector<std::string> ranged;
  /// The read acknowledges what it delivers (XREADGROUP … NOACK: the group never lists them pending): each
  /// is settled by its delivery, as a no-ack AMQP delivery's StepInfo::acked says at request time.
  bool settles = false;
  /// They went to a process its group no longer counts as a member (evicted at a rebalance, not rejoined):
  /// recorded as its deliveries, but not its to settle (its client drops them once it learns it left).
  bool stale = false;
  /// Entries the answer hands back for redelivery: the server closed the channel they were delivered on
  /// (RabbitMQ's channel.close answering a request, which requeues the channel's unacknowledged messages).
  std::vector<std::string> returned;
  std::string summary;     ///< e.g. "UPDATE 1", "+OK", "(nil)", "2 entries", abbreviated
  /// From here on the client waits for the broker to push it entries (an AMQP consumer after its
  /// basic.consume): it is at rest once it holds no entry, as after a read that delivered nothing.
  bool waiting = false;
};

/// What one client->server message means.
struct ClientMsg {
  enum class Kind {
    Pass,       ///< not part of a step (startup, authentication, Terminate): forward at once
    Part,       ///< part of a step request that is not complete yet (Parse, Bind, ...): hold it
    Stream,     ///< part of a step request too large to hold (a 100 MB value), which the server can't act
                ///< on before its last byte (a RequestEnd): forward it at once
    RequestEnd, ///< completes a step request; `step` describes the step (held parts + this message)
    LocalReply, ///< answer `local_reply` to the client, forward nothing (e.g. 'N' to SSLRequest)
  };
  size_t size = 0;
  Kind kind = Kind::Pass;
  StepInfo step;           ///< when kind == RequestEnd
  std::string local_reply; ///< when kind == LocalReply
  /// When not empty: the bytes the proxy forwards to the server in place of the message's `size` bytes, of
  /// the same length (Kafka: a Fetch whose max wait is capped for the embedded broker).
  std::string replacement;
};

/// What one server->client message means.
struct ServerMsg {
  enum class Kind {
    Pass,     ///< not part of any step's reply (auth, ParameterStatus before the first step, RESP3 push)
    Part,     ///< part of the reply of the oldest outstanding step
    Stream,   ///< part of a reply too large to hold (a 100 MB GET), which the client can't act on before
              ///< its last byte (the ReplyEnd): forward it at once
    ReplyEnd, ///< completes the reply of the oldest outstanding step; `reply` describes it
    /// A message the server sends of itself that is a step of its own (an AMQP basic.deliver and its
    /// content, after the Part messages before it): `step` names it and `reply` says what it delivered. The
    /// proxy asks the listener about it as a request and then as its reply, before the client has any of it.
    Push,
  };
  size_t size = 0;
  Kind kind = Kind::Pass;
  ReplyInfo reply; ///< when kind == ReplyEnd or Push
  StepInfo step;   ///< when kind == Push
  /// When kind == ReplyEnd (PostgreSQL only): this many outstanding steps, older than the one this
  /// message completes, got no reply at all — the server skipped them (extended protocol after an
  /// error, up to the next Sync). They end here, unanswered; then the next one ends with `reply`.
  size_t skipped = 0;
  /// When not empty: the bytes the proxy forwards to the client in place of the message's `size` bytes
  /// (Kafka: a Metadata or FindCoordinator answer with the brokers' addresses made the proxy's own).
  std::string replacement;
};

/// One connection's protocol state (startup phase, prepared statements and portals, RESP2/RESP3, the
/// FIFO of outstanding steps). Pure: the same bytes give the same messages, split however they arrive.
class Tracker {
public:
  virtual ~Tracker() = default;
  virtual Decode onClient(std::string_view buf, ClientMsg& out) = 0;
  virtual Decode onServer(std::string_view buf, ServerMsg& out) = 0;
  /// The latest request that ended a step was not forwarded: the proxy answered it itself, so no reply
  /// is due from the server for it.
  virtual void withdrawLast() = 0;
  /// Why the latest Decode::Invalid refused bytes that are the protocol but that this tracker can't follow
  /// (a NATS delivery of a pull for several messages at once), in words for the report; empty when the
  /// bytes are not the protocol at all.
  virtual std::string refusal() const { return {}; }
  /// The entries the broker takes back once this connection ends, however it ends (AMQP: the deliveries
  /// still unacknowledged on it, which RabbitMQ requeues); none where a delivery outlives its connection
  /// (a Valkey consumer group's pending entries, a NATS ack wait).
  virtual std::vector<std::string> returnedAtEnd() const { return {}; }
};
using TrackerPtr = std::unique_ptr<Tracker>;

/// What the HTTP tracker names in a CALL step's detail: the key header and the JSON body's reference member.
struct HttpCall {
  std::string keyHeader = "Idempotency-Key";
  std::string ref = "event_id";
};

TrackerPtr makePgTracker();   ///< PostgreSQL frontend/backend protocol v3
TrackerPtr makeRespTracker(); ///< RESP2 and RESP3 (HELLO 3 switches replies to RESP3)
/// HTTP/1.1 (the sink's side): each request is a step, verb CALL, detail "POST /charges ref=R key=K"; its
/// reply is the next final answer, summarised by its status ("200", "200 replayed" with Idempotent-Replayed).
TrackerPtr makeHttpTracker(HttpCall call = {});

} // namespace idem::proxy
