#include "http_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <pqxx/pqxx>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <poll.h>
#include <unistd.h>

namespace idem::targets::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

/// An idle pool keeps at most this many connections (a burst is 16; the rest are closed on return).
constexpr size_t kMaxIdle = 32;

/// SIGTERM: exit 0 at once. Nothing needs finishing: a transaction in flight is rolled back by
/// PostgreSQL when its connection closes, exactly as after a kill.
void onSigterm(int) { _exit(0); }

/// `text` on one line (libpq's messages end in a newline and may span several lines).
std::string oneLine(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

/// Whether an idle pooled connection may serve a request. An idle connection's socket has nothing to
/// read; if it has (the server's FATAL on termination, EOF after a restart or a dropped proxy link) the
/// connection is dead, and handing it out would only turn the next request into a needless 503.
bool stillUsable(pqxx::connection& c) {
  int fd = c.sock();
  if (!c.is_open() || fd < 0) return false;
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

/// One header value, when the header came exactly once (a repeated one is a list: no single key).
std::optional<std::string_view> single(const Request& r, std::string_view name) {
  auto v = r.values(name);
  if (v.size() != 1) return std::nullopt;
  return v.front();
}

/// The handler's answer, or 503/500 when it threw. The Db's destructor then closes the connection
/// instead of pooling it: after an error its state (open transaction? alive at all?) is unknown.
Response runHandler(const char* name, const Handler& handler, const Request& req, DbPool& pool) {
  Db db(pool);
  try {
    Response res = handler(req, db);
    db.release();
    return res;
  } catch (const pqxx::failure& e) {
    // A lost connection, an ambiguous COMMIT (in_doubt_error) or a server error: 5xx answers are not
    // stored (policy replay_5xx false), so the client's retry decides again.
    std::fprintf(stderr, "%s: 503: %s\n", name, oneLine(e.what()).c_str());
    return {503, R"({"error":"database unavailable"})", ""};
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: 500: %s\n", name, oneLine(e.what()).c_str());
    return {500, R"({"error":"internal error"})", ""};
  }
}

/// Answers one request: the server's own routes, or the handler for POST /orders.
bhttp::response<bhttp::string_body> answer(const char* name, const Handler& handler, DbPool& pool,
                                           bhttp::request<bhttp::string_body>& in) {
  std::string_view target(in.target().data(), in.target().size());
  std::string_view path = target.substr(0, target.find('?'));
  Response res;
  const char* contentType = "application/json";
  if (path == "/healthz" && in.method() == bhttp::verb::get) {
    res = {200, "ok", ""};
    contentType = "text/plain";
  } else if (path == "/orders" && in.method() == bhttp::verb::post) {
    Request req;
    req.method = std::string(in.method_string());
    req.target = std::string(target);
    for (const auto& f : in) req.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    req.body = std::move(in.body());
    res = runHandler(name, handler, req, pool);
  } else if (path == "/orders") {
    res = {405, R"({"error":"method not allowed"})", ""};
  } else {
    res = {404, R"({"error":"not found"})", ""};
  }
  bhttp::response<bhttp::string_body> out{static_cast<bhttp::status>(res.status), in.version()};
  out.set(bhttp::field::content_type, contentType);
  if (res.status == 405) out.set(bhttp::field::allow, "POST");
  if (!res.location.empty()) out.set(bhttp::field::location, res.location);
  out.keep_alive(in.keep_alive());
  out.body() = std::move(res.body);
  out.prepare_payload();
  return out;
}

/// One client connection, on its own thread: requests in turn until the client closes or stops
/// keep-alive. Every error ends the connection only (a client that hung up early is routine here).
void serveConnection(tcp::socket sock, const char* name, const Handler& handler, DbPool& pool) {
  beast::error_code ec;
  try {
    beast::flat_buffer buf;
    for (;;) {
      bhttp::request<bhttp::string_body> in;
      bhttp::read(sock, buf, in, ec);
      if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message) break;
      if (ec && ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category()) {
        // Not HTTP Beast can parse: say so once, then close (the stream position is lost).
        bhttp::response<bhttp::string_body> bad{bhttp::status::bad_request, 11};
        bad.set(bhttp::field::content_type, "application/json");
        bad.keep_alive(false);
        bad.body() = R"({"error":"bad request"})";
        bad.prepare_payload();
        bhttp::write(sock, bad, ec);
        break;
      }
      if (ec) break; // reset, or another socket error
      auto out = answer(name, handler, pool, in);
      bhttp::write(sock, out, ec);
      if (ec || !out.keep_alive()) break;
    }
    sock.shutdown(tcp::socket::shutdown_send, ec);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: connection: %s\n", name, oneLine(e.what()).c_str());
  }
}

} // namespace

std::vector<std::string_view> Request::values(std::string_view name) const {
  std::vector<std::string_view> out;
  for (const auto& [n, v] : headers)
    if (iequals(n, name)) out.emplace_back(v);
  return out;
}

std::unique_ptr<pqxx::connection> DbPool::take() {
  {
    std::lock_guard lock(mu_);
    while (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      if (stillUsable(*c)) return c;
    }
  }
  // Connect outside the lock: a slow connect must not hold up the other requests.
  auto c = std::make_unique<pqxx::connection>(url_);
  // libpqxx 6 would otherwise reconnect by itself under a later statement; a broken connection must
  // fail that request (503) and be dropped instead. Deprecated in 6.4, but still the only switch.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  c->inhibit_reactivation(true);
#pragma GCC diagnostic pop
  return c;
}

void DbPool::give(std::unique_ptr<pqxx::connection> c) {
  std::lock_guard lock(mu_);
  if (idle_.size() < kMaxIdle) idle_.push_back(std::move(c));
}

Db::~Db() = default; // an unreleased connection is closed with c_, never pooled

pqxx::connection& Db::conn() {
  if (!c_) c_ = pool_.take();
  return *c_;
}

void Db::release() {
  if (c_ && c_->is_open()) pool_.give(std::move(c_));
  c_.reset();
}

int serveMain(const char* name, Handler handleOrder) {
  std::signal(SIGTERM, onSigterm);
  std::signal(SIGPIPE, SIG_IGN); // a client gone mid-write is an error code, not a death
  const char* port = std::getenv("PORT");
  const char* url = std::getenv("DATABASE_URL");
  if (port == nullptr || *port == '\0' || url == nullptr || *url == '\0') {
    std::fprintf(stderr, "%s: missing environment variable %s\n", name,
                 port == nullptr || *port == '\0' ? "PORT" : "DATABASE_URL");
    return 1;
  }
  char* end = nullptr;
  long portNumber = std::strtol(port, &end, 10);
  if (*end != '\0' || portNumber <= 0 || portNumber > 65535) {
    std::fprintf(stderr, "%s: PORT is not a port number: %s\n", name, port);
    return 1;
  }
  // Never freed: detached connection threads use them until the process exits.
  auto* pool = new DbPool(url);
  auto* handler = new Handler(std::move(handleOrder));
  try {
    asio::io_context ioc{1}; // the sockets only do blocking calls: nothing ever runs it
    tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"),
                                              static_cast<unsigned short>(portNumber)));
    std::fprintf(stderr, "%s: listening on 127.0.0.1:%ld\n", name, portNumber);
    for (;;) {
      tcp::socket sock(ioc);
      beast::error_code ec;
      acceptor.accept(sock, ec);
      if (ec) {
        // EMFILE and the like: wait a little rather than spin; the harness's request will be retried.
        std::fprintf(stderr, "%s: accept: %s\n", name, ec.message().c_str());
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      std::thread(serveConnection, std::move(sock), name, std::cref(*handler), std::ref(*pool)).detach();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, oneLine(e.what()).c_str());
    return 1;
  }
}

std::optional<std::string> parseSfString(std::string_view v) {
  // RFC 8941 4.2: surrounding spaces are discarded (HTTP also strips tabs around a field value).
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  if (v.size() < 2 || v.front() != '"') return std::nullopt;
  std::string out;
  for (size_t i = 1; i < v.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(v[i]);
    if (c == '\\') { // 4.2.5: only \" and \\ are escapes; anything else after a backslash fails
      if (++i == v.size() || (v[i] != '"' && v[i] != '\\')) return std::nullopt;
      out += v[i];
    } else if (c == '"') { // the closing quote must end the value: no parameters, no second item
      if (i + 1 != v.size()) return std::nullopt;
      return out;
    } else if (c < 0x20 || c > 0x7e) {
      return std::nullopt;
    } else {
      out += static_cast<char>(c);
    }
  }
  return std::nullopt; // no closing quote
}

std::optional<std::string> sfStringKey(const Request& r) {
  auto v = single(r, "Idempotency-Key");
  if (!v) return std::nullopt;
  auto key = parseSfString(*v);
  if (!key || key->empty()) return std::nullopt;
  return key;
}

std::optional<std::string> opaqueKey(const Request& r) {
  auto v = single(r, "Idempotency-Key");
  if (!v || v->empty()) return std::nullopt;
  return std::string(*v);
}

long long envInt(const char* name, long long fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(v, &end, 10);
  return (*end != '\0' || errno != 0 || n < 0) ? fallback : n;
}

} // namespace idem::targets::http
