#include "supervisor/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include <sys/socket.h>

#include <mutex>

namespace idem {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::string fnv64Hex(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

struct HttpCall::Impl {
  int port = 0;
  http::request<http::string_body> req;
  asio::io_context ioc;
  tcp::socket socket{ioc};
  beast::flat_buffer buffer;
  std::mutex mu; ///< guards `cancelled` against the socket being opened or closed
  bool cancelled = false;

  /// The answer so far from a parser that has at least the header.
  static HttpAnswer fromHeader(const http::response_parser<http::string_body>& p, const char* outcome) {
    HttpAnswer a;
    a.outcome = outcome;
    const auto& m = p.get();
    a.status = static_cast<int>(m.result_int());
    if (auto it = m.find(http::field::location); it != m.end()) a.location = std::string(it->value());
    return a;
  }
  /// Reads the status line and headers (and, with `someBody`, the first bytes that came of the body), then
  /// closes: cut, or reset when the headers never came.
  HttpAnswer cutAfterHeaders(bool someBody) {
    beast::error_code ec;
    http::response_parser<http::string_body> p;
    http::read_header(socket, buffer, p, ec);
    HttpAnswer a;
    a.outcome = "reset";
    if (!ec) {
      a = fromHeader(p, "cut");
      if (someBody && !p.is_done()) http::read_some(socket, buffer, p, ec);
    }
    shutdown();
    return a;
  }
  void shutdown() {
    std::lock_guard<std::mutex> lock(mu);
    beast::error_code ec;
    socket.shutdown(tcp::socket::shutdown_both, ec);
    socket.close(ec);
  }
};

HttpCall::HttpCall(int port, std::string method, std::string target, std::map<std::string, std::string> headers,
                   std::string body)
    : impl_(std::make_unique<Impl>()) {
  impl_->port = port;
  auto& r = impl_->req;
  r.method_string(method);
  r.target(target);
  r.version(11);
  r.set(http::field::host, fmt::format("127.0.0.1:{}", port));
  r.set(http::field::connection, "close");
  if (!body.empty()) r.set(http::field::content_type, "application/json");
  for (const auto& [k, v] : headers) r.set(k, v);
  r.body() = std::move(body);
  r.prepare_payload();
}

HttpCall::~HttpCall() { impl_->shutdown(); }

bool HttpCall::connect() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  if (impl_->cancelled) return false;
  beast::error_code ec;
  impl_->socket.open(tcp::v4(), ec);
  if (ec) return false;
  lock.unlock();
  impl_->socket.connect(tcp::endpoint(asio::ip::make_address_v4("127.0.0.1"), static_cast<unsigned short>(impl_->port)), ec);
  return !ec;
}

bool HttpCall::write() {
  beast::error_code ec;
  http::write(impl_->socket, impl_->req, ec);
  return !ec;
}

HttpAnswer HttpCall::read() {
  beast::error_code ec;
  http::response_parser<http::string_body> p;
  p.body_limit(64 * 1024 * 1024);
  http::read(impl_->socket, impl_->buffer, p, ec);
  if (ec && !(ec == http::error::end_of_stream && p.is_done())) {
    HttpAnswer a;
    a.outcome = "reset";
    if (p.is_header_done()) a = Impl::fromHeader(p, "reset");
    return a;
  }
  HttpAnswer a = Impl::fromHeader(p, "answered");
  a.body = p.get().body();
  a.digest = fnv64Hex(a.body);
  impl_->shutdown();
  return a;
}

HttpAnswer HttpCall::readHeadersThenCut() { return impl_->cutAfterHeaders(false); }

HttpAnswer HttpCall::readSomeThenCut() { return impl_->cutAfterHeaders(true); }

void HttpCall::close() { impl_->shutdown(); }

void HttpCall::cancel() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->cancelled = true;
  // shutdown(2) on the descriptor wakes a blocking connect/read/write in the other thread; closing it
  // there would race with that call, so the call's own thread closes it.
  if (impl_->socket.is_open()) ::shutdown(impl_->socket.native_handle(), SHUT_RDWR);
}

} // namespace idem
