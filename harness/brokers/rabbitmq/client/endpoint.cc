#include "brokers/rabbitmq/client/endpoint.h"

#include "core/error.h"
#include "servers/url.h"

#include <fmt/format.h>

namespace idem::rabbitmq::client {

AmqpEndpoint parseAmqpUrl(const std::string& text) {
  const std::string flag = "--amqp-url";
  const auto u = url::parse(flag, text);
  if (u.scheme() == "amqps") throw UsageError(flag + ": TLS (amqps://) is not supported; use amqp://");
  if (u.scheme() != "amqp")
    throw UsageError(fmt::format("{}: scheme must be amqp://, got '{}://'", flag, std::string(u.scheme())));
  AmqpEndpoint ep;
  ep.host = url::host(flag, u);
  ep.port = url::port(flag, u, 5672);
  if (u.has_userinfo()) {
    ep.user = u.user();
    ep.password = u.has_password() ? std::string(u.password()) : "";
  }
  if (u.has_query()) throw UsageError(fmt::format("{}: query parameters are not supported", flag));
  // The path's one segment, decoded, is the vhost: amqp://h/%2F is "/", amqp://h/orders is "orders".
  const std::string_view encoded = u.encoded_path();
  if (encoded.size() > 1 && encoded.substr(1).find('/') != std::string_view::npos)
    throw UsageError(fmt::format("{}: the path must be one vhost (encode a '/' in it as %2F), got '{}'", flag, encoded));
  std::string path = u.path();
  if (!path.empty() && path.front() == '/') path.erase(0, 1);
  if (!path.empty()) ep.vhost = path;
  return ep;
}

} // namespace idem::rabbitmq::client
