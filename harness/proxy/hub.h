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
  /// A step in flight whose connection was cut (its owner was killed at another step, or a side closed).
  virtual void onCut(int owner, const StepToken& token) = 0;
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
