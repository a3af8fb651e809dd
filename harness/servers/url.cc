#include "servers/url.h"

#include "core/error.h"

#include <boost/url/parse.hpp>
#include <fmt/format.h>

#include <charconv>

namespace idem::url {

namespace urls = boost::urls;

urls::url_view parse(const std::string& flag, const std::string& text) {
  if (text.empty()) throw UsageError(fmt::format("{}: empty URL", flag));
  auto r = urls::parse_uri(text);
  if (!r) throw UsageError(fmt::format("{}: not a valid URL ({}): '{}'", flag, r.error().message(), text));
  return *r;
}

std::string host(const std::string& flag, const urls::url_view& u) {
  if (!u.has_authority() || u.encoded_host().empty()) {
    throw UsageError(fmt::format("{}: a host is required (idemproof connects over TCP)", flag));
  }
  if (u.host_type() == urls::host_type::ipv6) return u.host_ipv6_address().to_string();
  return u.host();
}

int port(const std::string& flag, const urls::url_view& u, int fallback) {
  if (!u.has_port() || u.port().empty()) return fallback;
  std::string_view s(u.port().data(), u.port().size());
  int port = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), port);
  if (ec != std::errc() || end != s.data() + s.size() || port < 1 || port > 65535) {
    throw UsageError(fmt::format("{}: port must be 1..65535, got '{}'", flag, s));
  }
  return port;
}

} // namespace idem::url
