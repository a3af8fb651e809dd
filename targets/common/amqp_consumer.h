#pragma once
/// The RabbitMQ side of the AMQP reference consumers (docs/target-contract.md, RabbitMQ), over librabbitmq
/// 0.11. A consumer connects to $AMQP_URL, opens channel 1, asks for one unacknowledged message at a time
/// (basic.qos prefetch 1) and consumes $QUEUE with manual acknowledgements under the consumer tag
/// $CONSUMER; when it acknowledges, relative to its transaction, is each target's own (what idemproof
/// judges). SIGTERM (consumerMain's flag) ends runAmqpConsumer between messages (a wait lasts at most
/// 100 ms): the connection closes, the broker requeues what was not acknowledged, the process exits 0.
#include "consumer.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

struct amqp_connection_state_t_;

namespace idem::targets {

/// The process's settings, from the environment the harness gives.
struct AmqpConfig {
  std::string databaseUrl;
  std::string url;
  std::string queue;
  std::string consumer;
};

/// Reads AmqpConfig from the environment. Throws std::runtime_error naming a missing variable.
AmqpConfig amqpConfigFromEnv();

/// A delivery as the consumer sees it. `entry.id` is the message_id; its fields are the JSON body's (every
/// value a string), and the `event_id` header when the body has no such field.
struct AmqpMessage {
  Entry entry;
  uint64_t deliveryTag = 0;
  bool redelivered = false;
};

class AmqpConsumer {
public:
  /// Connects, logs in, and starts consuming. Throws std::runtime_error naming what failed.
  explicit AmqpConsumer(const AmqpConfig& config);
  /// Closes the channel and the connection.
  ~AmqpConsumer();
  AmqpConsumer(const AmqpConsumer&) = delete;
  AmqpConsumer& operator=(const AmqpConsumer&) = delete;

  /// The next delivery within `timeoutMs`, or nullopt. Throws when the connection or channel fails.
  std::optional<AmqpMessage> next(int timeoutMs);
  /// basic.ack of one delivery (the server sends no answer). Throws when it cannot be sent.
  void ack(const AmqpMessage& m);

private:
  amqp_connection_state_t_* conn_ = nullptr;
};

using AmqpHandler = std::function<void(const AmqpMessage&)>;

/// Waits (100 ms at a time) and hands each delivery to `handler` until SIGTERM.
void runAmqpConsumer(AmqpConsumer& consumer, const AmqpHandler& handler);

} // namespace idem::targets
