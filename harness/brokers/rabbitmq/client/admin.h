#pragma once
/// The harness's own AMQP connection to the node (never through the proxies), over librabbitmq:
/// the run's queue, the producer, and the queue's ready count.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

struct amqp_connection_state_t_;

namespace idem::rabbitmq::client {

class AmqpAdmin {
public:
  /// Connects and logs in to `vhost`, opens channel 1. Throws std::runtime_error naming what failed.
  AmqpAdmin(const std::string& host, int port, const std::string& user, const std::string& password,
            const std::string& vhost);
  ~AmqpAdmin();
  AmqpAdmin(const AmqpAdmin&) = delete;
  AmqpAdmin& operator=(const AmqpAdmin&) = delete;

  /// A durable queue `name` (nothing when it exists).
  void declareQueue(const std::string& name);
  void deleteQueue(const std::string& name);
  /// A passive queue.declare's counts: the messages ready in the queue (not the unacknowledged ones) and
  /// the consumers subscribed to it.
  struct Counts {
    int64_t ready = 0, consumers = 0;
  };
  Counts counts(const std::string& name);
  /// Publishes a persistent message to `queue` through the default exchange, with its message_id and an
  /// `event_id` header when not empty.
  void publish(const std::string& queue, const std::string& body, const std::string& messageId,
               const std::string& eventId);

  /// Takes every message of `queue` (basic.get, acknowledged on delivery): (message_id, body) each, in order.
  std::vector<std::pair<std::string, std::string>> drain(const std::string& queue);
  /// The message_id of every message ready in `queue`, in order; each is handed back (basic.get, then
  /// basic.recover with requeue), so the queue holds them as before.
  std::vector<std::string> peek(const std::string& queue);

private:
  /// basic.get until the queue is empty: settled at delivery (`settle`), or left unacknowledged.
  std::vector<std::pair<std::string, std::string>> take(const std::string& queue, bool settle);
  /// Throws when the last RPC failed.
  void check(const char* what);
  amqp_connection_state_t_* conn_ = nullptr;
  std::string where_;
};

} // namespace idem::rabbitmq::client
