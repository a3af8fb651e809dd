// externalEndpoints(): --database-url (libpq URI) and --valkey-url (redis://) parsed with Boost.URL.
#include "servers/servers.h"
#include "servers/url.h"

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

std::string currentUser() {
  const passwd* pw = ::getpwuid(::geteuid());
  return pw ? pw->pw_name : "postgres";
}

void parseDatabase(const std::string& text, ServerEndpoints& ep) {
  const std::string flag = "--database-url";
  auto u = url::parse(flag, text);
  if (u.scheme() != "postgresql" && u.scheme() != "postgres") {
    throw UsageError(fmt::format("{}: scheme must be postgresql:// or postgres://, got '{}://'", flag,
                                 std::string(u.scheme())));
  }
  ep.pg_host = url::host(flag, u);
  ep.pg_port = url::port(flag, u, 5432);
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
  auto u = url::parse(flag, text);
  if (u.scheme() == "rediss" || u.scheme() == "valkeys") {
    throw UsageError(fmt::format("{}: TLS ({}://) is not supported; use redis://", flag, std::string(u.scheme())));
  }
  if (u.scheme() != "redis" && u.scheme() != "valkey") {
    throw UsageError(fmt::format("{}: scheme must be redis://, got '{}://'", flag, std::string(u.scheme())));
  }
  ep.valkey_host = url::host(flag, u);
  ep.valkey_port = url::port(flag, u, 6379);
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
