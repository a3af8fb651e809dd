#pragma once
/// The AMQP 0-9-1 tracker (RabbitMQ): one consumer connection's frames, as steps (proxy/tracker.h).
///
/// Steps: each synchronous method the client sends (QUEUE_DECLARE, QOS, CONSUME, GET, RECOVER, TX_COMMIT,
/// ...) is a step its -ok (or the server's channel.close) answers; basic.ack, basic.nack, basic.reject and
/// basic.publish with its content are steps the server never answers (StepInfo::oneWay). A basic.deliver
/// and its content, which the server pushes to a consumer, is a step of its own, DELIVER (ServerMsg::Push).
/// Connection and channel set-up and teardown, heartbeats, basic.return and publisher confirms pass outside
/// any step.
///
/// Entries are named by the message's message_id property (the harness's producer sets a fresh one per
/// publish); a delivery tag names it on its channel until it is acknowledged, and an ack with `multiple`
/// acknowledges every outstanding tag up to its own on that channel.
#include "proxy/tracker.h"

#include <set>
#include <string>

namespace idem::rabbitmq {

class AmqpTracker : public proxy::Tracker {
public:
  /// The entries delivered on this connection and not acknowledged, rejected or given back yet: what the
  /// broker gives back to the queue when the connection closes.
  virtual std::set<std::string> unacked() const = 0;
  /// The connection asked for messages the broker settles as it sends them (basic.consume or basic.get with
  /// no-ack): what it pushes may be gone from the queue before any of it is read.
  virtual bool settlesOnDelivery() const = 0;
};

std::unique_ptr<AmqpTracker> makeTracker();

} // namespace idem::rabbitmq
