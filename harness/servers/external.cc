// externalEndpoints(): --database-url (libpq URI) and --valkey-url (redis://) parsed with Boost.URL.
#include "servers/servers.h"

#include "core/error.h"

#include <pwd.h>
#include <unistd.h>

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <fmt/format.h>

#include <charconv>

namespace idem {
namespace {

namespace urls = boost::urls;

urls::url_view parseUrl(const std::string& flag, const std::string& text) {
  if (text.empty()) throw UsageError(fmt::format("{}: empty URL", flag));
  auto r = urls::parse_uri(text);
  if (!r) throw UsageError(fmt::format("{}: not a valid URL ({}): '{}'", flag, r.error().message(), text));
  return *r;
}

std::string hostOf(const std::string& flag, const urls::url_view& u) {
  if (!u.has_authority() || u.encoded_host().empty()) {
    throw UsageError(fmt::format("{}: a host is required (idemproof connects over TCP)", flag));
  }
  if (u.host_type() == urls::host_type::ipv6) return u.host_ipv6_address().to_string();
  return u.host();
}

int portOf(const std::string& flag, const urls::url_view& u, int fallback) {
  if (!u.has_port() || u.port().empty()) return fallback;
  std::string_view s(u.port().data(), u.port().size());
  int port = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), port);
  if (ec != std::errc() || end != s.data() + s.size() || port < 1 || port > 65535) {
    throw UsageError(fmt::format("{}: port must be 1..65535, got '{}'", flag, s));
  }
  return port;
}

std::string currentUser() {
  const passwd* pw = ::getpwuid(::geteuid());
  return pw ? pw->pw_name : "postgres";
}

void parseDatabase(const std::string& text, ServerEndpoints& ep) {
  const std::string flag = "--database-url";
  auto u = parseUrl(flag, text);
  if (u.scheme() != "postgresql" && u.scheme() != "postgres") {
    throw UsageError(fmt::format("{}: scheme must be postgresql:// or postgres://, got '{}://'", flag,
                                 std::string(u.scheme())));
  }
  ep.pg_host = hostOf(flag, u);
  ep.pg_port = portOf(flag, u, 5432);
  // libpq's defaults: the OS user name, and a database named after the user.
  ep.pg_user = u.has_userinfo() && !u.encoded_user().empty() ? u.user() : currentUser();
  ep.pg_password = u.has_password() ? u.password() : "";
  std::string db = u.path();
  if (!db.empty() && db.front() == '/') db.erase(0, 1);
  if (db.find('/') != std::string::npos) {
    throw UsageError(fmt::format("{}: the path must be a database name, got '{}'", flag, db));
  }
  ep.pg_database = db.empty() ? ep.pg_user : db;
  ep.pg_options = u.has_query() ? std::string(u.encoded_query()) : "";
}

void parseValkey(const std::string& text, ServerEndpoints& ep) {
  const std::string flag = "--valkey-url";
  auto u = parseUrl(flag, text);
  if (u.scheme() == "rediss" || u.scheme() == "valkeys") {
    throw UsageError(fmt::format("{}: TLS ({}://) is not supported; use redis://", flag, std::string(u.scheme())));
  }
  if (u.scheme() != "redis" && u.scheme() != "valkey") {
    throw UsageError(fmt::format("{}: scheme must be redis://, got '{}://'", flag, std::string(u.scheme())));
  }
  ep.valkey_host = hostOf(flag, u);
  ep.valkey_port = portOf(flag, u, 6379);
  if (u.has_userinfo()) {
    std::string user = u.user();
    if (!user.empty() && user != "default") {
      throw UsageError(fmt::format("{}: ACL user '{}' is not supported; use redis://:password@host", flag, user));
    }
    ep.valkey_password = u.has_password() ? u.password() : "";
  }
  if (u.has_query()) throw UsageError(fmt::format("{}: query parameters are not supported", flag));
  std::string db = u.path();
  if (!db.empty() && db.front() == '/') db.erase(0, 1);
  ep.valkey_db = 0;
  if (!db.empty()) {
    auto [end, ec] = std::from_chars(db.data(), db.data() + db.size(), ep.valkey_db);
    if (ec != std::errc() || end != db.data() + db.size() || ep.valkey_db < 0) {
      throw UsageError(fmt::format("{}: the path must be a database number (/0, /1, ...), got '/{}'", flag, db));
    }
  }
}

} // namespace

ServerEndpoints externalEndpoints(const std::string& databaseUrl, const std::string& valkeyUrl) {
  ServerEndpoints ep;
  ep.embedded = false;
  parseDatabase(databaseUrl, ep);
  parseValkey(valkeyUrl, ep);
  return ep;
}

} // namespace idem
