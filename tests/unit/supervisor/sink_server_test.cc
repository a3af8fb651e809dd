// The sink server on a loopback socket, without PostgreSQL: its policies (honour, ignore), what it answers
// and the call records it appends before each answer.
#include "supervisor/sink_server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <catch2/catch.hpp>

using namespace idem;
namespace http = boost::beast::http;

namespace {

struct SinkGot {
  int status = 0;
  std::string body;
  bool replayed = false;
};

/// Sends the requests on one keep-alive connection and returns their answers.
std::vector<SinkGot> sinkCall(int port, const std::vector<http::request<http::string_body>>& requests) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket s(io);
  s.connect({boost::asio::ip::address_v4::loopback(), static_cast<unsigned short>(port)});
  boost::beast::flat_buffer buf;
  std::vector<SinkGot> out;
  for (auto req : requests) {
    req.prepare_payload();
    http::write(s, req);
    http::response<http::string_body> res;
    http::read(s, buf, res);
    out.push_back({static_cast<int>(res.result_int()), res.body(), res["Idempotent-Replayed"] == "true"});
  }
  return out;
}

http::request<http::string_body> sinkCharge(const std::string& body, const std::string& key = "",
                                        const std::string& path = "/charges") {
  http::request<http::string_body> r{http::verb::post, path, 11};
  r.set(http::field::host, "127.0.0.1");
  if (!key.empty()) r.set("Idempotency-Key", key);
  r.body() = body;
  return r;
}

SinkSpec sinkSpec() {
  SinkSpec s;
  s.answer = {{"id", "ch_{execution}"}, {"for", "{ref}"}};
  s.booked = "SELECT 1";
  return s;
}

std::vector<ops::Call> sinkCalls(const History& h) {
  std::vector<ops::Call> out;
  const auto all = h.ops(); // recordsOf points into it
  for (const auto& [op, c] : recordsOf<ops::Call>(all)) {
    CHECK(op->process == "sink");
    out.push_back(*c);
  }
  return out;
}

const std::string kSinkA = R"({"amount":5,"event_id":"a"})";
const std::string kSinkA2 = R"({"amount":6,"event_id":"a"})";

} // namespace

TEST_CASE("sink server: honouring keys, a repeat is replayed, another payload is a mismatch") {
  SinkServer sink;
  History h;
  sink.reset(sinkSpec(), true, &h);
  auto got = sinkCall(sink.port(), {sinkCharge(kSinkA, "k1"), sinkCharge(kSinkA, "k1"), sinkCharge(kSinkA2, "k1"), sinkCharge(kSinkA), sinkCharge(kSinkA)});
  REQUIRE(got.size() == 5);
  CHECK(got[0].status == 200);
  CHECK(got[0].body == R"({"for":"a","id":"ch_1"})");
  CHECK(got[1].status == 200);
  CHECK(got[1].replayed);
  CHECK(got[1].body == got[0].body);
  CHECK(got[2].status == 422);
  CHECK(got[3].body == R"({"for":"a","id":"ch_2"})"); // no key: executes
  CHECK(got[4].body == R"({"for":"a","id":"ch_3"})");
  const auto c = sinkCalls(h);
  REQUIRE(c.size() == 5);
  CHECK(c[0].id == 1);
  CHECK(c[0].outcome == "executed");
  CHECK(c[0].execution == 1);
  CHECK(c[0].keyHeader);
  CHECK(c[0].key == "k1");
  CHECK(c[0].ref == "a");
  CHECK(c[0].method == "POST");
  CHECK(c[0].path == "/charges");
  CHECK(c[0].digest.size() == 16);
  CHECK(c[1].outcome == "replayed");
  CHECK(c[1].execution == 1);
  CHECK(c[2].outcome == "mismatch");
  CHECK(c[2].status == 422);
  CHECK(c[2].execution == 0);
  CHECK(c[3].outcome == "executed");
  CHECK_FALSE(c[3].keyHeader);
  CHECK(c[4].execution == 3);
}

TEST_CASE("sink server: ignoring keys every call executes, reset forgets keys and counters") {
  SinkServer sink;
  History h;
  sink.reset(sinkSpec(), false, &h);
  auto got = sinkCall(sink.port(), {sinkCharge(kSinkA, "k1"), sinkCharge(kSinkA, "k1")});
  CHECK(got[1].body == R"({"for":"a","id":"ch_2"})");
  CHECK_FALSE(got[1].replayed);
  History next;
  sink.reset(sinkSpec(), true, &next);
  got = sinkCall(sink.port(), {sinkCharge(kSinkA, "k1"), sinkCharge(kSinkA, "k1")});
  CHECK(got[0].body == R"({"for":"a","id":"ch_1"})");
  CHECK(got[1].replayed);
  CHECK(sinkCalls(h).size() == 2);
  CHECK(sinkCalls(next).size() == 2);
  sink.detach();
  sinkCall(sink.port(), {sinkCharge(kSinkA)});
  CHECK(sinkCalls(next).size() == 2); // detached: answered, not recorded
}

TEST_CASE("sink server: another path or a body without the reference is rejected") {
  SinkServer sink;
  History h;
  sink.reset(sinkSpec(), true, &h);
  auto got = sinkCall(sink.port(), {sinkCharge(kSinkA, "", "/refunds"), sinkCharge(R"({"amount":5})"), sinkCharge("not json")});
  CHECK(got[0].status == 404);
  CHECK(got[1].status == 400);
  CHECK(got[2].status == 400);
  const auto c = sinkCalls(h);
  REQUIRE(c.size() == 3);
  for (const auto& x : c) CHECK(x.outcome == "rejected");
  CHECK(c[0].path == "/refunds");
  CHECK(c[2].ref.empty());
}
