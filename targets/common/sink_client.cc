#include "sink_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cstdlib>
#include <stdexcept>

namespace idem::targets {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

/// Host and port of "http://host:port[/...]".
std::pair<std::string, std::string> hostPort(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) throw std::runtime_error("SINK_URL '" + url + "' is not an http:// URL");
  std::string rest = url.substr(scheme.size());
  rest = rest.substr(0, rest.find('/'));
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos) return {rest, "80"};
  return {rest.substr(0, colon), rest.substr(colon + 1)};
}

} // namespace

std::string sinkUrlFromEnv() {
  const char* v = std::getenv("SINK_URL");
  if (!v || !*v) throw std::runtime_error("SINK_URL is not set (the scenario has no sink?)");
  return v;
}

SinkAnswer charge(const std::string& sinkUrl, const std::string& method, const std::string& path,
                  const std::string& jsonBody, const std::optional<std::string>& key,
                  std::chrono::milliseconds timeout) {
  const auto [host, port] = hostPort(sinkUrl);
  asio::io_context io;
  beast::tcp_stream stream(io);
  asio::ip::tcp::resolver resolver(io);
  http::request<http::string_body> req{http::string_to_verb(method), path, 11};
  req.set(http::field::host, host);
  req.set(http::field::content_type, "application/json");
  if (key) req.set("Idempotency-Key", *key);
  req.keep_alive(false);
  req.body() = jsonBody;
  req.prepare_payload();
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  beast::error_code failure;
  const char* stage = "connect";
  // Asynchronous operations, so that the stream's deadline covers connecting, writing and reading.
  stream.expires_after(timeout);
  stream.async_connect(resolver.resolve(host, port), [&](beast::error_code ec, auto) {
    if (ec) return void(failure = ec);
    stage = "send";
    http::async_write(stream, req, [&](beast::error_code ec, size_t) {
      if (ec) return void(failure = ec);
      stage = "read the answer";
      http::async_read(stream, buffer, res, [&](beast::error_code ec, size_t) {
        if (ec) failure = ec;
      });
    });
  });
  io.run();
  beast::error_code ignore;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignore);
  if (failure) {
    const bool late = failure == beast::error::timeout;
    throw std::runtime_error(std::string("sink call ") + method + " " + path + ": could not " + stage + ": " +
                             (late ? "no answer within " + std::to_string(timeout.count()) + " ms" : failure.message()));
  }
  return {static_cast<int>(res.result_int()), res.body()};
}

} // namespace idem::targets
