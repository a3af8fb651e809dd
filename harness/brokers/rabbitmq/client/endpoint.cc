#include "brokers/rabbitmq/client/endpoint.h"

#include "core/error.h"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <fmt/format.h>

#include <charconv>

namespace idem::rabbitmq::client {

AmqpEndpoint parseAmqpUrl(const std::string& text) {
  const std::string flag = "--amqp-url";
  if (text.empty()) throw UsageError(flag + ": empty URL");
  auto r = boost::urls::parse_uri(text);
  if (!r) throw UsageError(fmt::format("{}: not a valid URL ({}): '{}'", flag, r.error().message(), text));
  const auto& u = *r;
  if (u.scheme() == "amqps")
    throw UsageError(fmt::format("{}: TLS (amqps://) is not supported; use amqp://", flag));
  if (u.scheme() != "amqp")
    throw UsageError(fmt::format("{}: scheme must be amqp://, got '{}://'", flag, std::string(u.scheme())));
  if (!u.has_authority() || u.encoded_host().empty())
    throw UsageError(fmt::format("{}: a host is required (idemproof connects over TCP)", flag));
  AmqpEndpoint ep;
  ep.host = u.host_type() == boost::urls::host_type::ipv6 ? u.host_ipv6_address().to_string() : std::string(u.host());
  if (u.has_port() && !u.port().empty()) {
    std::string_view s(u.port().data(), u.port().size());
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), ep.port);
    if (ec != std::errc() || end != s.data() + s.size() || ep.port < 1 || ep.port > 65535)
      throw UsageError(fmt::format("{}: port must be 1..65535, got '{}'", flag, s));
  }
  if (u.has_userinfo()) {
    ep.user = u.user();
    ep.password = u.has_password() ? std::string(u.password()) : "";
  }
  if (u.has_query()) throw UsageError(fmt::format("{}: query parameters are not supported", flag));
  // The path's first segment, decoded, is the vhost: amqp://h/%2F is "/", amqp://h/orders is "orders".
  std::string path = u.path();
  if (!path.empty() && path.front() == '/') path.erase(0, 1);
  if (u.encoded_path().size() > 1 && std::string_view(u.encoded_path()).substr(1).find('/') != std::string_view::npos)
    throw UsageError(fmt::format("{}: the path must be one vhost (encode a '/' in it as %2F), got '{}'", flag,
                                 std::string(u.encoded_path())));
  if (!path.empty()) ep.vhost = path;
  return ep;
}

} // namespace idem::rabbitmq::client
