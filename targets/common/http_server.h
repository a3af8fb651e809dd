#pragma once
/// The HTTP side shared by the reference HTTP targets (docs/http-contract.md): a small threaded HTTP/1.1
/// server over Boost.Beast, the Idempotency-Key parsers, and a pool of PostgreSQL connections in which a
/// connection serves one request at a time.
///
/// The server listens on 127.0.0.1:$PORT and gives every accepted connection a thread of its own (a burst
/// sends up to 16 requests at once, each on its own connection, and a handler blocks in PostgreSQL).
/// Keep-alive is honoured. It answers GET /healthz itself (200 "ok"), hands POST /orders to the target's
/// handler, and answers 404 to any other path (405 to another method on /orders). Beast stays inside
/// http_server.cc: the targets include this header only, so Beast is compiled once.
///
/// PostgreSQL: a handler asks its Db for a connection only once it needs one (a 400 touches nothing), and
/// the server opens connections lazily (it listens before it ever talks to PostgreSQL: readiness is a
/// connection to PORT or GET /healthz). When the handler throws a pqxx error (a lost connection, an
/// ambiguous COMMIT, a server error) the answer is 503 and that connection is dropped, never reused: its
/// state is unknown, and a transaction left open on it is rolled back when it closes.
#include <pqxx/connection> // pqxx::connection is an alias in 6.4: no forward declaration

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem::targets::http {

/// One request, as read off the wire.
struct Request {
  std::string method;
  std::string target; ///< the request target, query string included
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  /// Every value of header `name` (case-insensitive), in order of arrival.
  std::vector<std::string_view> values(std::string_view name) const;
};

/// What a handler answers. The server adds Content-Type: application/json, Content-Length and keep-alive.
struct Response {
  int status = 200;
  std::string body;     ///< sent byte for byte
  std::string location; ///< the Location header; empty: none
};

/// A pool of PostgreSQL connections to one URL. take() hands out an idle connection or opens a new one;
/// give() returns it for the next request. The pool never hands one connection to two takers.
class DbPool {
public:
  explicit DbPool(std::string url) : url_(std::move(url)) {}
  std::unique_ptr<pqxx::connection> take(); ///< throws pqxx::broken_connection when it cannot connect
  void give(std::unique_ptr<pqxx::connection> c);

private:
  std::string url_;
  std::mutex mu_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
};

/// The PostgreSQL connection of one request: opened (or taken from the pool) on the first conn().
class Db {
public:
  explicit Db(DbPool& pool) : pool_(pool) {}
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  pqxx::connection& conn();
  /// Back to the pool (the request ended normally). Without it the connection is closed, not reused.
  void release();

private:
  DbPool& pool_;
  std::unique_ptr<pqxx::connection> c_;
};

using Handler = std::function<Response(const Request&, Db&)>;

/// Runs the server until SIGTERM (exit 0 at once: an open transaction dies with its connection). Reads
/// PORT (required) and DATABASE_URL (required, used lazily). Returns 1, after one line on stderr naming
/// `name`, when it cannot start.
int serveMain(const char* name, Handler handleOrder);

/// The key of an `Idempotency-Key` header sent as an RFC 8941 sf-string: exactly one header whose value,
/// spaces around it aside, is `"…"` holding printable ASCII (0x20-0x7E) with `\"` and `\\` as the only
/// escapes. The key is the unescaped content. nullopt when the header is missing, repeated or malformed,
/// or the key is empty (the policy's `missing_key`).
std::optional<std::string> sfStringKey(const Request& r);

/// The key of an opaque `Idempotency-Key` header: its whole value; nullopt when missing, repeated or empty.
std::optional<std::string> opaqueKey(const Request& r);

/// The unescaped content of an sf-string `value` (the parsing rule of sfStringKey); exposed for tests.
std::optional<std::string> parseSfString(std::string_view value);

/// An environment variable as a non-negative integer, `fallback` when unset or not a number.
long long envInt(const char* name, long long fallback);

} // namespace idem::targets::http
