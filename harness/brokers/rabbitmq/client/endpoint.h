#pragma once
/// Where the RabbitMQ of a run is: the command's embedded node, or the user's broker (--amqp-url).
#include <string>

namespace idem::rabbitmq::client {

struct AmqpEndpoint {
  std::string host = "127.0.0.1";
  int port = 5672;
  std::string user = "guest", password = "guest";
  std::string vhost = "/";
};

/// Parses an AMQP URI as RabbitMQ documents it (amqp://user:password@host:port/vhost, every part
/// percent-encoded; no path or an empty one is the vhost "/", which is spelt %2F otherwise). Throws
/// UsageError "--amqp-url: ..." naming what is wrong.
AmqpEndpoint parseAmqpUrl(const std::string& url);

} // namespace idem::rabbitmq::client
