#include "brokers/nats/client/endpoint.h"

#include "core/error.h"

#include "servers/url.h"

#include <boost/url/encode.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <fmt/format.h>

namespace idem::nats::client {

std::string NatsEndpoint::credentials() const {
  auto enc = [](const std::string& s) { return boost::urls::encode(s, boost::urls::unreserved_chars); };
  if (!token.empty()) return enc(token);
  if (!user.empty()) return enc(user) + ":" + enc(password);
  return "";
}

std::string NatsEndpoint::url(const std::string& h, int p) const {
  const std::string cred = credentials();
  return fmt::format("nats://{}{}:{}", cred.empty() ? "" : cred + "@", h, p);
}

NatsEndpoint parseNatsUrl(const std::string& text) {
  const std::string flag = "--nats-url";
  if (text.find(',') != std::string::npos)
    throw UsageError(fmt::format("{}: one server, not a list: '{}'", flag, text));
  const auto u = url::parse(flag, text);
  if (u.scheme() == "tls") throw UsageError(flag + ": TLS (tls://) is not supported; use nats://");
  if (u.scheme() != "nats")
    throw UsageError(fmt::format("{}: scheme must be nats://, got '{}://'", flag, std::string(u.scheme())));
  NatsEndpoint ep;
  ep.host = url::host(flag, u);
  ep.port = url::port(flag, u, 4222);
  if (u.has_userinfo()) {
    // As libnats reads it: a user part alone is a token, with a password it is a user.
    if (u.has_password()) ep.user = u.user(), ep.password = u.password();
    else ep.token = u.user();
  }
  if (!u.encoded_path().empty() && u.encoded_path() != "/")
    throw UsageError(fmt::format("{}: a NATS URL has no path, got '{}'", flag, std::string(u.encoded_path())));
  if (u.has_query()) throw UsageError(fmt::format("{}: query parameters are not supported", flag));
  return ep;
}

} // namespace idem::nats::client
