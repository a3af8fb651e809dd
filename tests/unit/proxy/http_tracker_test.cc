// The HTTP/1.1 tracker (the sink's side) on written bytes: every request a CALL step, fed at every split
// offset; Content-Length and chunked bodies both ways, keep-alive, 100 Continue, Connection: close, HEAD.
#include "replay.h"

#include <catch2/catch.hpp>

using namespace idem::proxy;
using namespace idem::proxy::test;

namespace {

TrackerPtr httpMake() { return makeHttpTracker(); }

std::string httpPost(const std::string& body, const std::string& extra = "") {
  return "POST /charges HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + extra +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string httpAnswer(int status, const std::string& body, const std::string& extra = "") {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\n" + extra + "Content-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

const std::string kHttpBody = R"({"amount":5000,"event_id":"e-1","wallet":"w1"})";

Events httpRun(const std::string& client, const std::string& server) {
  checkSplitInvariance(httpMake, {Chunk{true, client}, Chunk{false, server}});
  return feedWhole(httpMake, client, server);
}

} // namespace

TEST_CASE("http tracker: a request is a CALL step named by method, path, key and ref") {
  const Events e = httpRun(httpPost(kHttpBody, "Idempotency-Key: e-1\r\n"), httpAnswer(200, R"({"id":"ch_1"})"));
  REQUIRE(verbs(e) == std::vector<std::string>{"CALL"});
  CHECK(steps(e)[0].detail == "POST /charges ref=e-1 key=e-1");
  REQUIRE(replies(e).size() == 1);
  CHECK(replies(e)[0].summary == "200");
  CHECK_FALSE(replies(e)[0].error);
  requireBalanced(e);
}

TEST_CASE("http tracker: keep-alive, several calls on one connection, replayed and 5xx answers") {
  const std::string client = httpPost(kHttpBody) + httpPost(kHttpBody, "Idempotency-Key: k\r\n") + httpPost("{}", "Connection: close\r\n");
  const std::string server = httpAnswer(200, "{}") + httpAnswer(200, "{}", "Idempotent-Replayed: true\r\n") +
                             httpAnswer(503, R"({"error":"x"})", "Connection: close\r\n");
  const Events e = httpRun(client, server);
  REQUIRE(steps(e).size() == 3);
  CHECK(steps(e)[0].detail == "POST /charges ref=e-1");
  CHECK(steps(e)[2].detail == "POST /charges");
  CHECK(summaries(e) == std::vector<std::string>{"200", "200 replayed", "error: 503"});
  requireBalanced(e);
}

TEST_CASE("http tracker: chunked bodies in both directions, with trailers") {
  const std::string client = "POST /charges HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "f\r\n{\"event_id\":\"e-\r\n4\r\n7\"}\n\r\n0\r\n\r\n";
  const std::string server = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{}\n\r\n0\r\nX-T: 1\r\n\r\n";
  const Events e = httpRun(client, server);
  REQUIRE(steps(e).size() == 1);
  CHECK(steps(e)[0].detail == "POST /charges ref=e-7");
  CHECK(summaries(e) == std::vector<std::string>{"200"});
  requireBalanced(e);
}

TEST_CASE("http tracker: Expect 100-continue, the head goes on at once and the interim answer passes") {
  const std::string client = httpPost(kHttpBody, "Expect: 100-continue\r\n");
  const std::string server = "HTTP/1.1 100 Continue\r\n\r\n" + httpAnswer(200, "{}");
  const Events e = httpRun(client, server);
  REQUIRE(e.client.size() == 2);
  CHECK(e.client[0].kind == ClientMsg::Kind::Stream); // the head: the server answers 100 before the body
  CHECK(e.client[1].kind == ClientMsg::Kind::RequestEnd);
  CHECK(e.client[0].size + e.client[1].size == client.size());
  REQUIRE(e.server.size() == 2);
  CHECK(e.server[0].kind == ServerMsg::Kind::Pass);
  CHECK(e.server[1].kind == ServerMsg::Kind::ReplyEnd);
  CHECK(steps(e)[0].detail == "POST /charges ref=e-1");
  requireBalanced(e);
}

TEST_CASE("http tracker: a HEAD's answer has no body, a withdrawn request owes no answer") {
  const std::string client = "HEAD /charges HTTP/1.1\r\nHost: h\r\n\r\n" + httpPost(kHttpBody);
  const std::string server = "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n" + httpAnswer(201, "{}");
  const Events e = httpRun(client, server);
  CHECK(summaries(e) == std::vector<std::string>{"200", "201"});
  auto t = httpMake();
  ClientMsg m;
  REQUIRE(t->onClient(httpPost(kHttpBody), m) == Decode::Message);
  t->withdrawLast(); // answered by the proxy: the next answer is another request's
  ServerMsg r;
  REQUIRE(t->onServer(httpAnswer(200, "{}"), r) == Decode::Message);
  CHECK(r.kind == ServerMsg::Kind::ReplyEnd);
}

TEST_CASE("http tracker: bytes that are not HTTP are invalid, a part is more data") {
  auto t = httpMake();
  ClientMsg m;
  CHECK(t->onClient("\x16\x03\x01\x02\x00", m) == Decode::Invalid);
  CHECK(httpMake()->onClient("POST /charges HTTP/1.1\r\nContent-Le", m) == Decode::NeedMoreData);
  ServerMsg r;
  CHECK(httpMake()->onServer("SSH-2.0-OpenSSH\r\n", r) == Decode::Invalid);
}

TEST_CASE("http tracker: a continued request's head goes on even when its body turns out bad") {
  // Found by the fuzzer: whole, the body's bad chunk made the request invalid before its head was reported;
  // in pieces, the head went on first. Now the head is its own message either way.
  const std::string client = "POST /charges HTTP/1.1\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "2\r\n{}\r\nzz\r\n\r\n";
  checkSplitInvariance(httpMake, {Chunk{true, client}, Chunk{false, ""}});
  const Events e = feedWhole(httpMake, client, "");
  REQUIRE(e.client.size() == 1);
  CHECK(e.client[0].kind == ClientMsg::Kind::Stream);
  CHECK(e.client_invalid);
}
