// externalEndpoints(): --database-url and --valkey-url parsing and every error path.
#include "core/error.h"
#include "servers/servers.h"

#include <catch2/catch.hpp>

#include <pwd.h>
#include <unistd.h>

using namespace idem;

namespace {

const std::string kPg = "postgresql://u:p@db.example:6543/app";
const std::string kVk = "redis://:secret@cache.example:6380/5";

std::string usageError(const std::string& db, const std::string& vk) {
  try {
    externalEndpoints(db, vk);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST_CASE("a full pair of URLs", "[external]") {
  ServerEndpoints ep = externalEndpoints("postgresql://alice:p%40ss@db.example:6543/orders?sslmode=disable&application_name=x",
                                         "redis://:s%3Acret@cache.example:6380/5");
  CHECK_FALSE(ep.embedded);
  CHECK(ep.pg_host == "db.example");
  CHECK(ep.pg_port == 6543);
  CHECK(ep.pg_user == "alice");
  CHECK(ep.pg_password == "p@ss");
  CHECK(ep.pg_database == "orders");
  CHECK(ep.pg_options == "sslmode=disable&application_name=x");
  CHECK(ep.valkey_host == "cache.example");
  CHECK(ep.valkey_port == 6380);
  CHECK(ep.valkey_password == "s:cret");
  CHECK(ep.valkey_db == 5);
  CHECK(ep.valkey_binary.empty());
}

TEST_CASE("defaults: ports, database, no password", "[external]") {
  ServerEndpoints ep = externalEndpoints("postgres://bob@127.0.0.1", "redis://localhost");
  CHECK(ep.pg_host == "127.0.0.1");
  CHECK(ep.pg_port == 5432);
  CHECK(ep.pg_user == "bob");
  CHECK(ep.pg_password.empty());
  CHECK(ep.pg_database == "bob"); // libpq: the database defaults to the user name
  CHECK(ep.pg_options.empty());
  CHECK(ep.valkey_port == 6379);
  CHECK(ep.valkey_db == 0);
  CHECK(ep.valkey_password.empty());

  ServerEndpoints noUser = externalEndpoints("postgresql://h/db", "redis://h/");
  const passwd* pw = ::getpwuid(::geteuid());
  CHECK(noUser.pg_user == (pw ? pw->pw_name : "postgres"));
  CHECK(noUser.pg_database == "db");
  CHECK(noUser.valkey_db == 0);
}

TEST_CASE("IPv6 hosts and the user-less password forms", "[external]") {
  ServerEndpoints ep = externalEndpoints("postgresql://u@[::1]:5433/d", "redis://default:pw@[::1]:7000/1");
  CHECK(ep.pg_host == "::1");
  CHECK(ep.pg_port == 5433);
  CHECK(ep.valkey_host == "::1");
  CHECK(ep.valkey_port == 7000);
  CHECK(ep.valkey_password == "pw");
  CHECK(externalEndpoints(kPg, "redis://default@h").valkey_password.empty());
  CHECK(externalEndpoints(kPg, "valkey://h:1/2").valkey_db == 2);
}

TEST_CASE("errors name the flag", "[external]") {
  CHECK(usageError("", kVk) == "--database-url: empty URL");
  CHECK(usageError(kPg, "") == "--valkey-url: empty URL");
  CHECK(usageError("not a url", kVk).rfind("--database-url: not a valid URL", 0) == 0);
  CHECK(usageError("mysql://u@h/db", kVk) == "--database-url: scheme must be postgresql:// or postgres://, got 'mysql://'");
  CHECK(usageError("postgresql:///db", kVk) == "--database-url: a host is required (idemproof connects over TCP)");
  CHECK(usageError("postgresql://h:0/db", kVk) == "--database-url: port must be 1..65535, got '0'");
  CHECK(usageError("postgresql://h:70000/db", kVk) == "--database-url: port must be 1..65535, got '70000'");
  CHECK(usageError("postgresql://h/a/b", kVk) == "--database-url: the path must be a database name, got 'a/b'");
  CHECK(usageError(kPg, "rediss://h:6380") == "--valkey-url: TLS (rediss://) is not supported; use redis://");
  CHECK(usageError(kPg, "http://h") == "--valkey-url: scheme must be redis://, got 'http://'");
  CHECK(usageError(kPg, "redis://h/x") == "--valkey-url: the path must be a database number (/0, /1, ...), got '/x'");
  CHECK(usageError(kPg, "redis://h/-1") == "--valkey-url: the path must be a database number (/0, /1, ...), got '/-1'");
  CHECK(usageError(kPg, "redis://h?db=1") == "--valkey-url: query parameters are not supported");
  CHECK(usageError(kPg, "redis://alice:pw@h") == "--valkey-url: ACL user 'alice' is not supported; use redis://:password@host");
  CHECK(usageError(kPg, "redis://alice@h") == "--valkey-url: ACL user 'alice' is not supported; use redis://:password@host");
  CHECK(usageError(kPg, "redis://h:99999") == "--valkey-url: port must be 1..65535, got '99999'");
  CHECK(usageError(kPg, "redis:///0") == "--valkey-url: a host is required (idemproof connects over TCP)");
}
