#pragma once
/// The parts of a server URL a flag gives (--database-url, --valkey-url, --amqp-url, --nats-url), read with
/// Boost.URL; every error is a UsageError "<flag>: ..." on one line.
#include <boost/url/url_view.hpp>

#include <string>

namespace idem::url {

/// `text` parsed as a URI (not empty).
boost::urls::url_view parse(const std::string& flag, const std::string& text);
/// The host, required (idemproof connects over TCP); an IPv6 address without its brackets.
std::string host(const std::string& flag, const boost::urls::url_view& u);
/// The port, `fallback` when the URL has none; 1..65535.
int port(const std::string& flag, const boost::urls::url_view& u, int fallback);

} // namespace idem::url
