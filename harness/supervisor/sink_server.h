#pragma once
/// The sink: idemproof in a payment provider's place (docs/target-contract.md, "The sink"). An HTTP/1.1 server
/// on 127.0.0.1 with its own thread and keep-alive connections, one per workspace, behind the proxies' sink
/// listeners (so every call is a CALL step). It answers the scenario's declared call under the run's policy
/// and appends one `call` record (process "sink") per request it receives, before its answer leaves: a call
/// it executed is in the history even when its answer never reaches the consumer.
#include "history/history.h"
#include "scenario/scenario.h"

#include <memory>

namespace idem {

class SinkServer {
public:
  SinkServer();  ///< listens on 127.0.0.1 at a free port; throws when it can't
  ~SinkServer(); ///< stops: connections closed, thread joined
  SinkServer(const SinkServer&) = delete;
  SinkServer& operator=(const SinkServer&) = delete;

  int port() const;
  /// A new schedule: forgets every key, answer and counter; from now on answers `spec`'s call, honouring keys
  /// or not, and records each call in `history` (nullptr: records nothing). Connections of the previous
  /// schedule are closed.
  void reset(const SinkSpec& spec, bool honourKeys, History* history);
  /// Records nothing more (the run's history is about to go).
  void detach();

  struct Impl; ///< private to sink_server.cc

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace idem
