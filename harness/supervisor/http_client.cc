#include "supervisor/http_client.h"
#include "supervisor/http_body.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <optional>

namespace idem {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::string fnv64Hex(const std::string& s) {
  uint64_t h = DigestBody::kFnvOffset;
  for (unsigned char c : s) {
    h ^= c;
    h *= DigestBody::kFnvPrime;
  }
  return fmt::format("{:016x}", h);
}

std::string DigestBody::value_type::digest() const { return fmt::format("{:016x}", fnv); }

bool isJsonMediaType(const std::string& contentType) {
  std::string t = contentType.substr(0, contentType.find(';'));
  t.erase(std::remove_if(t.begin(), t.end(), [](unsigned char c) { return std::isspace(c); }), t.end());
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (t == "application/json") return true;
  const auto slash = t.find('/');
  return slash != std::string::npos && t.size() > 5 && t.compare(t.size() - 5, 5, "+json") == 0;
}

std::string canonicalJsonDigest(const std::string& body) {
  // allow_exceptions = false: a body that is no JSON comes back "discarded" instead of throwing.
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded()) return "";
  return fnv64Hex(j.dump()); // nlohmann::json keeps object keys sorted: the dump is canonical
}

namespace {

using Parser = http::response_parser<DigestBody>;

} // namespace

struct HttpCall::Impl {
  int port = 0;
  http::request<http::string_body> req;
  asio::io_context ioc;
  tcp::socket socket{ioc};
  beast::flat_buffer buffer;
  std::mutex mu; ///< guards `cancelled` against the socket being opened or closed
  bool cancelled = false;

  /// Reads answers' headers until a final one's (an interim 1xx has no body, and its final answer follows
  /// on the connection; 101 is final: the client asked for no upgrade). False when the connection broke first.
  bool readFinalHeader(std::optional<Parser>& p, beast::error_code& ec) {
    while (true) {
      p.emplace();
      p->body_limit(ops::kAnswerLimit);
      http::read_header(socket, buffer, *p, ec);
      if (ec) return false;
      const unsigned status = p->get().result_int();
      if (status < 100 || status >= 200 || status == 101) return true;
    }
  }
  /// The answer so far from a parser that has at least the final header.
  static HttpAnswer fromHeader(const Parser& p, const char* outcome) {
    HttpAnswer a;
    a.outcome = outcome;
    const auto& m = p.get();
    a.status = static_cast<int>(m.result_int());
    if (auto it = m.find(http::field::location); it != m.end()) a.location = std::string(it->value());
    if (auto it = m.find(http::field::content_type); it != m.end()) a.contentType = std::string(it->value());
    return a;
  }
  /// Reads the final status line and headers (and, with `someBody`, the first bytes that came of the body),
  /// then closes: cut, or reset when the headers never came.
  HttpAnswer cutAfterHeaders(bool someBody) {
    beast::error_code ec;
    std::optional<Parser> p;
    HttpAnswer a;
    a.outcome = "reset";
    if (readFinalHeader(p, ec)) {
      a = fromHeader(*p, "cut");
      if (someBody && !p->is_done()) http::read_some(socket, buffer, *p, ec);
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
  std::optional<Parser> p;
  HttpAnswer a;
  a.outcome = "reset";
  if (!impl_->readFinalHeader(p, ec)) return a;
  http::read(impl_->socket, impl_->buffer, *p, ec);
  if (ec == http::error::body_limit) {
    a = Impl::fromHeader(*p, "too-large");
    a.size = p->get().body().size;
    impl_->shutdown();
    return a;
  }
  if (ec && !(ec == http::error::end_of_stream && p->is_done())) return Impl::fromHeader(*p, "reset");
  a = Impl::fromHeader(*p, "answered");
  const DigestBody::value_type& body = p->get().body();
  a.size = body.size;
  a.digest = body.digest();
  if (body.whole() && isJsonMediaType(a.contentType)) a.jsonDigest = canonicalJsonDigest(body.kept);
  a.body = body.kept.substr(0, kAnswerHeadBytes);
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
