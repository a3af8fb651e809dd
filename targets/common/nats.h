#pragma once
/// The NATS side of the NATS reference consumers (docs/target-contract.md, NATS JetStream), over libnats
/// 3.4.1. A consumer binds a pull subscription to the durable $DURABLE of stream $STREAM through $NATS_URL
/// and fetches one message at a time (a pull request of batch 1 that waits up to 100 ms, so that SIGTERM
/// is seen soon); what it acknowledges, and when, is each target's own (that is what idemproof judges).
/// Acknowledgements are synchronous (natsMsg_AckSync: +ACK sent as a request the server answers), so that
/// an ACK reaches the server before the consumer's next step, whatever that step's connection.
#include "consumer.h"

#include <nats/nats.h>

#include <functional>
#include <string>

namespace idem::targets {

/// The process's settings, from the environment the harness gives.
struct NatsConfig {
  std::string databaseUrl;
  std::string url; ///< nats://TOKEN@127.0.0.1:PORT (libnats reads the token in the user part)
  std::string stream;
  std::string subject;
  std::string durable;
  std::string consumer;
};

/// Reads NatsConfig from the environment. Throws std::runtime_error naming a missing variable.
NatsConfig natsConfigFromEnv();

/// One delivered message: its entry (`id`: the stream sequence; fields: the JSON payload's, and the
/// `event_id` header when the payload has no such field) and the message to acknowledge.
struct NatsMessage {
  Entry entry;
  natsMsg* msg = nullptr; ///< owned by the loop; valid during the handler
};

class NatsConsumer {
public:
  /// Connects and binds the pull subscription. Throws std::runtime_error.
  explicit NatsConsumer(const NatsConfig& config);
  ~NatsConsumer();
  NatsConsumer(const NatsConsumer&) = delete;
  NatsConsumer& operator=(const NatsConsumer&) = delete;

  /// +ACK, and waits for the server's answer. Returns the error text, empty when it succeeded.
  std::string ack(const NatsMessage& m);

  /// Fetches one message at a time and hands it to `handler` until SIGTERM. Throws on a lost connection.
  void run(const std::function<void(const NatsMessage&)>& handler);

private:
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
  natsSubscription* sub_ = nullptr;
};

} // namespace idem::targets
