#pragma once
/// The proxies of one worker: for each consumer process, a pair of listeners on 127.0.0.1 (PostgreSQL and
/// Valkey) so that every connection belongs to exactly one process. Bytes pass through unchanged; the
/// trackers decode them, and at every step boundary the StepListener decides whether to withhold the
/// request (kill before) or its reply (kill after). All sockets run on one I/O thread, so a kill decided
/// at one step is enforced before any other byte of that process moves.
#include "proxy/tracker.h"

#include <boost/asio.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

namespace idem::proxy {

enum class Server { Pg, Valkey };
const char* toString(Server s); ///< "pg" | "valkey"

/// A step in flight, handed back with its reply.
struct StepToken {
  int64_t id = 0;
};

/// How a step in flight ended without its reply reaching the process.
enum class CutKind {
  Withheld,   ///< its request never left the proxy: the server never saw it
  Forwarded,  ///< its request was handed to the server's socket (the server may have executed it) and the
              ///< connection was cut before the reply reached the process (a kill at another step, a close)
  Unobserved, ///< the server's bytes could not be decoded: its reply passed through, unobserved
};
const char* toString(CutKind k); ///< "withheld" | "forwarded" | "unobserved"

/// What the proxy asks at each step boundary. Called on the I/O thread.
class StepListener {
public:
  virtual ~StepListener() = default;
  /// A complete request of process `owner`. Return true to kill before it: the request is withheld and
  /// the owner's process group must be SIGKILLed by the listener before it returns.
  virtual bool onRequest(int owner, Server server, int conn, const StepInfo& step, StepToken& token) = 0;
  /// The complete reply of `token`. Return true to kill after it: the reply is withheld (the listener
  /// kills the process group before returning).
  virtual bool onReply(int owner, const StepToken& token, const ReplyInfo& reply) = 0;
  /// A step in flight that ended without its reply being seen (see CutKind): its owner was killed at
  /// another step, a side closed, or the server's bytes stopped being decodable.
  virtual void onCut(int owner, const StepToken& token, CutKind how) = 0;
  /// The bytes of one direction of connection `conn` could not be decoded from byte `offset` on (counted
  /// from the connection's start in that direction); from there on they pass through unobserved: steps
  /// on it are neither named nor counted. `direction` is "client" or "server".
  virtual void onOpaque(int owner, Server server, int conn, const char* direction, uint64_t offset,
                        const std::string& reason) = 0;
};

struct Upstream {
  std::string host;
  int port = 0;
};

class Hub {
public:
  Hub(Upstream pg, Upstream valkey, StepListener& listener);
  ~Hub();
  Hub(const Hub&) = delete;
  Hub& operator=(const Hub&) = delete;

  struct Ports {
    int pg = 0;
    int valkey = 0;
  };
  /// Opens the two listeners of a new consumer process `owner` (any int unique in this hub).
  Ports open(int owner);
  /// Closes the owner's listeners and cuts all its connections (both directions, steps in flight get
  /// onCut). Blocks until done on the I/O thread. Safe to call from any thread, also twice.
  void close(int owner);
  /// For the listener, on the I/O thread, right after it killed `owner`: drop everything of the owner
  /// at once (nothing more is forwarded either way).
  void cutNow(int owner);
  /// Number of connections the owner has made so far.
  int connections(int owner) const;

  struct Impl; ///< private to hub.cc

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace idem::proxy
