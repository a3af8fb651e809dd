#include "brokers/nats/client/endpoint.h"

#include "core/error.h"

#include <boost/url/encode.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <boost/url/url_view.hpp>
#include <fmt/format.h>

#include <charconv>

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
  if (text.empty()) throw UsageError(flag + ": empty URL");
  if (text.find(',') != std::string::npos)
    throw UsageError(fmt::format("{}: one server, not a list: '{}'", flag, text));
  auto r = boost::urls::parse_uri(text);
  if (!r) throw UsageError(fmt::format("{}: not a valid URL ({}): '{}'", flag, r.error().message(), text));
  const auto& u = *r;
  if (u.scheme() == "tls")
    throw UsageError(fmt::format("{}: TLS (tls://) is not supported; use nats://", flag));
  if (u.scheme() != "nats")
    throw UsageError(fmt::format("{}: scheme must be nats://, got '{}://'", flag, std::string(u.scheme())));
  if (!u.has_authority() || u.encoded_host().empty())
    throw UsageError(fmt::format("{}: a host is required (idemproof connects over TCP)", flag));
  NatsEndpoint ep;
  ep.host = u.host_type() == boost::urls::host_type::ipv6 ? u.host_ipv6_address().to_string() : std::string(u.host());
  if (u.has_port() && !u.port().empty()) {
    std::string_view s(u.port().data(), u.port().size());
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), ep.port);
    if (ec != std::errc() || end != s.data() + s.size() || ep.port < 1 || ep.port > 65535)
      throw UsageError(fmt::format("{}: port must be 1..65535, got '{}'", flag, s));
  }
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
