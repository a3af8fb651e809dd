#pragma once
/// The proxies of one worker: for each consumer process, a listener on 127.0.0.1 per server (PostgreSQL, the
/// broker, and the sink in a run that has one) so that every connection belongs to exactly one process. Bytes pass through unchanged; the
/// trackers decode them, and at every step boundary the StepListener decides what happens to the request
/// or its reply (a Decision: pass, kill, drop, hold, answer an error). All sockets run on one I/O thread,
/// so a decision taken at one step is carried out before any other byte of that process moves.
#include "proxy/tracker.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace idem::proxy {

/// The servers a process reaches: PostgreSQL, its broker (Valkey, Kafka: BrokerSide names it), and in a run
/// whose scenario has one, the sink (the external API idemproof answers in a provider's place, HTTP/1.1).
enum class Server { Pg = 0, Broker = 1, Valkey = Broker, Sink = 2 };

/// A step in flight, handed back with its reply.
struct StepToken {
  int64_t id = 0;
};

/// How a step in flight ended without its reply being seen by the listener.
enum class CutKind {
  Withheld,   ///< its request never left the proxy: the server never saw it
  Forwarded,  ///< its request was handed to the server's socket (the server may have executed it) and the
              ///< connection was cut before the reply reached the process (a kill at another step, a close)
  Unobserved, ///< the server's bytes could not be decoded: its reply passed through, unobserved
};
const char* toString(CutKind k); ///< "withheld" | "forwarded" | "unobserved"

/// What the proxy does with a complete request (onRequest) or a complete reply (onReply).
struct Decision {
  enum class Kind {
    Pass,  ///< forward it
    Kill,  ///< withhold it and cut every connection of the process (the listener SIGKILLed it)
    Drop,  ///< withhold it and reset this connection; the process lives and sees a connection error
    Hold,  ///< withhold it, and what follows it in the same direction, until released (Hub::release) or
           ///< for `hold`; then forward it
    Answer, ///< send `answer` to the client instead (a request is then not forwarded: its reply is `answer`);
            ///< with `close`, then close the connection (a server that ends the session)
    Replace ///< a request only: send `answer` to the server in its place; the server's reply to it is the
            ///< step's reply (e.g. a statement that raises an error, so that the server's state is what the
            ///< client is told)
  };
  Kind kind = Kind::Pass;
  std::chrono::milliseconds hold{0}; ///< Hold: release by itself after this long (0: only by release())
  std::string answer;                ///< Answer: the bytes of the reply the client gets; Replace: the request
  bool close = false;                ///< Answer: close the connection once the client has the answer
  /// Answer, on the broker side: `answer` is empty and the client gets the broker's own error answer to
  /// the request with this code (BrokerSide::errorAnswer).
  std::string brokerError;

  static Decision pass() { return {}; }
};

/// What the proxy asks at each step boundary. Called on the I/O thread.
class StepListener {
public:
  virtual ~StepListener() = default;
  /// A new PostgreSQL connection of process `owner`, before the proxy connects it to the server: Pass, Kill,
  /// Drop (reset it), or Answer with `close` (the client's startup packet gets `answer`, a FATAL error,
  /// and the connection closes: the server never sees it).
  virtual Decision onConnect(int owner, Server server, int conn) {
    (void)owner, (void)server, (void)conn;
    return {};
  }
  /// A complete request of process `owner`. `token` identifies the step until it ends.
  virtual Decision onRequest(int owner, Server server, int conn, const StepInfo& step, StepToken& token) = 0;
  /// The complete reply of `token`.
  virtual Decision onReply(int owner, const StepToken& token, const ReplyInfo& reply) = 0;
  /// A reply held by a Hold decision was let through to the process (released, or its time passed).
  virtual void onReleased(int owner, const StepToken& token) = 0;
  /// A step in flight that ended without its reply being seen (see CutKind): its owner was killed at
  /// another step, a side closed, or the server's bytes stopped being decodable.
  virtual void onCut(int owner, const StepToken& token, CutKind how) = 0;
  /// The bytes of one direction of connection `conn` could not be decoded from byte `offset` on (counted
  /// from the connection's start in that direction); from there on they pass through unobserved: steps
  /// on it are neither named nor counted. `direction` is "client" or "server".
  virtual void onOpaque(int owner, Server server, int conn, const char* direction, uint64_t offset,
                        const std::string& reason) = 0;
  /// A connection of process `owner` ended, and with it the broker took back `entries` it had delivered on
  /// it (Tracker::returnedAtEnd): they are no longer the process's work.
  virtual void onReturnedAtEnd(int owner, const std::vector<std::string>& entries) { (void)owner, (void)entries; }
};

struct Upstream {
  std::string host;
  int port = 0;
};

/// The broker side of the proxies: its server's name in steps ("valkey", "kafka"), its protocol, where it
/// listens, and
/// the tracker of each connection, made when the listener on `listenPort` accepts it.
struct BrokerSide {
  std::string name;
  std::string protocol; ///< for messages: "RESP", "Kafka"
  Upstream upstream;
  std::function<TrackerPtr(int listenPort)> tracker;
  /// Set for a broker whose error answers depend on the request (Kafka's carry its correlation id and
  /// layout): the answer to `request` (its whole bytes) with error `code`, nullopt when it has none.
  /// Unset: the broker's errors are the fixed replies proxy/errors.h builds (RESP).
  std::function<std::optional<std::string>(std::string_view request, const std::string& code)> errorAnswer;
  /// With errorAnswer: the answer ends the connection (AMQP's connection.close), closed once the client has it.
  bool errorEndsConnection = false;
  /// With errorAnswer: the broker's transient error for a step of this verb (an error fault without code).
  std::function<std::string(const std::string& verb)> defaultError;
};

/// The sink side of the proxies: where idemproof's sink server listens, and what its CALL steps' details name.
struct SinkSide {
  Upstream upstream;
  HttpCall call;
};

class Hub {
public:
  /// A Valkey/Redis broker (RESP).
  Hub(Upstream pg, Upstream valkey, StepListener& listener);
  Hub(Upstream pg, BrokerSide broker, StepListener& listener);
  ~Hub();
  Hub(const Hub&) = delete;
  Hub& operator=(const Hub&) = delete;

  /// A run with a sink: every process opened from now on also gets a listener for it (Ports::sink). Call
  /// before the first open().
  void setSink(SinkSide sink);

  /// "pg", "sink", or the broker's name.
  const std::string& name(Server s) const;
  /// The broker side it was made with.
  const BrokerSide& broker() const;

  struct Ports {
    int pg = 0;
    int broker = 0;
    int sink = 0; ///< 0 without a sink
  };
  /// Opens the listeners of a new consumer process `owner` (any int unique in this hub): PostgreSQL, the
  /// broker, and the sink when the hub has one.
  Ports open(int owner);
  /// Closes the owner's listeners and cuts all its connections (both directions, steps in flight get
  /// onCut). Blocks until done on the I/O thread. Safe to call from any thread, also twice.
  void close(int owner);
  /// For the listener, on the I/O thread, right after it killed `owner`: drop everything of the owner
  /// at once (nothing more is forwarded either way).
  void cutNow(int owner);
  /// For the listener, on the I/O thread: how cutting the owner now would end its step in flight `token`
  /// (what onCut would then say), nullopt when none of the owner's connections has that step.
  std::optional<CutKind> cutKind(int owner, const StepToken& token) const;
  /// Releases a step held by a Hold decision (request or reply); no-op when it is not held (any more).
  /// Safe from any thread, also from inside a listener callback: it happens soon after, on the I/O thread.
  void release(const StepToken& token);
  /// Number of connections the owner has made so far.
  int connections(int owner) const;
  /// While `on`, nothing listens on any owner's port for `server`: a client that connects meets a refused
  /// connection, as it would while the real server restarts (accepting it and closing it at once, because
  /// the server is down, would be a behaviour no server has). Off: the same ports listen again. Blocks until
  /// done on the I/O thread; throws when a port can't be bound again.
  void refuse(Server server, bool on);

  struct Impl; ///< private to hub.cc

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace idem::proxy
