// supervisor/http_client.h and http_body.h: what the client keeps of an answer. The body type on recorded
// bytes split at every offset (the digest, size and first bytes of a chunked body do not depend on how the
// bytes arrive); then whole calls against a local socket that writes canned answers: interim 1xx answers
// read past, a body of any length digested within a bound, JSON compared in canonical form.
#include "supervisor/http_body.h"
#include "supervisor/http_client.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <thread>

using namespace idem;
namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

/// A chunked answer whose body is `body` in chunks of `chunk` bytes.
std::string chunked(int status, const std::string& body, size_t chunk) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n";
  for (size_t i = 0; i < body.size(); i += chunk) {
    std::string part = body.substr(i, chunk);
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", part.size());
    out += size + part + "\r\n";
  }
  return out + "0\r\n\r\n";
}

/// One connection on a local port: reads the whole request, then `answer` writes what it likes.
class OneShot {
public:
  explicit OneShot(std::function<void(tcp::socket&)> answer) : acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this, answer] {
      tcp::socket s(ioc_);
      acceptor_.accept(s);
      boost::beast::flat_buffer buf;
      http::request<http::string_body> req;
      boost::system::error_code ec;
      http::read(s, buf, req, ec);
      if (!ec) answer(s);
      s.shutdown(tcp::socket::shutdown_send, ec);
      s.close(ec);
    });
  }
  ~OneShot() { thread_.join(); }
  int port() const { return port_; }

private:
  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  int port_ = 0;
  std::thread thread_;
};

/// A POST to the local port, and its answer as the client reads it.
HttpAnswer postAndRead(int port) {
  HttpCall c(port, "POST", "/orders", {{"Idempotency-Key", "\"k1\""}}, R"({"ref":"r"})");
  REQUIRE(c.connect());
  REQUIRE(c.write());
  return c.read();
}

} // namespace

TEST_CASE("http body: the digest, size and first bytes of a chunked body, whatever the split of its bytes", "[http]") {
  std::string body;
  for (int i = 0; body.size() < DigestBody::kKeptBytes + 5000; ++i) body += std::to_string(i) + ",";
  const std::string wire = chunked(201, body, 1000);
  // Every split offset of a short answer, and a spread of offsets through the long one.
  const std::string shortWire = chunked(201, R"({"id":1,"status":"created"})", 7);
  for (const std::string* w : {&shortWire, &wire}) {
    const size_t step = w == &shortWire ? 1 : 997;
    for (size_t split = 1; split < w->size(); split += step) {
      http::response_parser<DigestBody> p;
      p.body_limit(boost::none);
      p.eager(true);
      boost::system::error_code ec;
      std::string pending;
      for (const std::string& piece : {w->substr(0, split), w->substr(split)}) {
        pending += piece;
        // The parser takes what it can and leaves the rest for when more has come.
        while (!pending.empty() && !p.is_done()) {
          const size_t used = p.put(asio::buffer(pending), ec);
          pending.erase(0, used);
          if (ec == http::error::need_more) {
            ec = {};
            break;
          }
          REQUIRE(!ec);
          if (used == 0) break;
        }
      }
      INFO("split at " << split);
      REQUIRE(p.is_done());
      const auto& v = p.get().body();
      const std::string& whole = w == &shortWire ? std::string(R"({"id":1,"status":"created"})") : body;
      CHECK(v.size == whole.size());
      CHECK(v.digest() == fnv64Hex(whole));
      CHECK(v.kept == whole.substr(0, DigestBody::kKeptBytes));
      CHECK(v.whole() == (whole.size() <= DigestBody::kKeptBytes));
    }
  }
}

TEST_CASE("http client: interim 1xx answers are read past to the final one, kept as JSON in canonical form", "[http]") {
  const std::string body = R"({"status": "created", "id": 1})";
  OneShot server([&](tcp::socket& s) {
    std::string a = "HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </style.css>\r\n\r\n"
                    "HTTP/1.1 201 Created\r\nContent-Type: application/json; charset=utf-8\r\nLocation: /orders/1\r\n"
                    "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    asio::write(s, asio::buffer(a));
  });
  HttpAnswer a = postAndRead(server.port());
  CHECK(a.outcome == "answered");
  CHECK(a.status == 201);
  CHECK(a.location == "/orders/1");
  CHECK(a.body == body);
  CHECK(a.digest == fnv64Hex(body));
  CHECK(a.jsonDigest == fnv64Hex(R"({"id":1,"status":"created"})"));
  CHECK(a.jsonDigest == canonicalJsonDigest(R"({"id":1,"status":"created"})"));
}

TEST_CASE("http client: a 102 and nothing more is no answer", "[http]") {
  OneShot server([](tcp::socket& s) { asio::write(s, asio::buffer(std::string("HTTP/1.1 102 Processing\r\n\r\n"))); });
  HttpAnswer a = postAndRead(server.port());
  CHECK(a.outcome == "reset");
  CHECK(a.status == 0);
}

TEST_CASE("http client: a long body is digested whole and kept in part, an endless one is too large", "[http]") {
  std::string body(3 << 20, 'x');
  for (size_t i = 0; i < body.size(); i += 4099) body[i] = static_cast<char>('a' + i % 26);
  {
    OneShot server([&](tcp::socket& s) { asio::write(s, asio::buffer(chunked(201, body, 65536))); });
    HttpAnswer a = postAndRead(server.port());
    CHECK(a.outcome == "answered");
    CHECK(a.size == body.size());
    CHECK(a.digest == fnv64Hex(body));
    CHECK(a.body == body.substr(0, kAnswerHeadBytes));
    CHECK(a.jsonDigest.empty()); // longer than what is kept whole: compared byte for byte
  }
  OneShot endless([](tcp::socket& s) {
    asio::write(s, asio::buffer(std::string("HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n")));
    const std::string chunk = "10000\r\n" + std::string(65536, ' ') + "\r\n";
    boost::system::error_code ec;
    while (!ec) asio::write(s, asio::buffer(chunk), ec);
  });
  HttpAnswer a = postAndRead(endless.port());
  CHECK(a.outcome == "too-large");
  CHECK(a.status == 201);
  CHECK(a.size <= ops::kAnswerLimit);
}

TEST_CASE("http client: JSON media types", "[http]") {
  CHECK(isJsonMediaType("application/json"));
  CHECK(isJsonMediaType("Application/JSON; charset=utf-8"));
  CHECK(isJsonMediaType("application/problem+json"));
  CHECK_FALSE(isJsonMediaType("text/plain"));
  CHECK_FALSE(isJsonMediaType("application/jsonx"));
  CHECK_FALSE(isJsonMediaType(""));
  CHECK(canonicalJsonDigest("{\"b\": 1, \"a\": [1, 2]}") == canonicalJsonDigest("{\"a\":[1,2],\"b\":1}"));
  CHECK(canonicalJsonDigest("not json").empty());
}
