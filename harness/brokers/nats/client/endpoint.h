#pragma once
/// Where the NATS server of a run is: the workspace's embedded nats-server, or the user's (--nats-url).
#include <string>

namespace idem::nats::client {

struct NatsEndpoint {
  std::string host = "127.0.0.1";
  int port = 4222;
  std::string token;          ///< nats://TOKEN@host: a token, or
  std::string user, password; ///< nats://USER:PASSWORD@host: a user; or neither

  /// The URL of `host:port` with these credentials (the harness's own connection, or the proxy's address).
  std::string url(const std::string& host, int port) const;
  /// The URL's user part ("", "TOKEN" or "USER:PASSWORD"), percent-encoded.
  std::string credentials() const;
};

/// Parses nats://[TOKEN@ | USER:PASSWORD@]host[:port]. Throws UsageError "--nats-url: ..." naming what is
/// wrong (TLS, a path, several servers).
NatsEndpoint parseNatsUrl(const std::string& url);

} // namespace idem::nats::client
