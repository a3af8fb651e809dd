// The NATS tracker on sessions recorded from real clients against nats-server 2.9.10 with JetStream
// (tests/captures/README.md): libnats 3.4.1 and nats.js 2.28.2, each one connection. Both do the same:
// set up a stream and a durable, publish three messages, then take one message per pull request and
// acknowledge it (+ACK; -NAK; +WPI then +ACK as a request; the NAKed one again, +TERM), one pull that
// expires empty (408; nats.js's after an idle heartbeat), and a plain publish.
#include "replay.h"

#include "brokers/nats/tracker.h"

#include <catch2/catch.hpp>

using namespace idem::proxy;
using namespace idem::proxy::test;
using Strings = std::vector<std::string>;

namespace {

TrackerPtr recordedTracker() { return idem::nats::makeTracker(); }

void checkSession(const std::string& file) {
  const auto chunks = loadCapture(file);
  checkSplitInvariance(recordedTracker, chunks);
  const Events e = wholeOf(recordedTracker, chunks);
  requireBalanced(e);
  CHECK(verbs(e) == Strings{"PUB", "PUB", "PUB", "FETCH", "ACK", "FETCH", "NAK", "FETCH", "WPI", "ACK", "FETCH",
                            "TERM", "FETCH", "PUB"});
  const auto st = steps(e);
  Strings acked;
  for (const auto& s : st) {
    INFO(s.verb << " " << s.detail);
    CHECK(s.oneWay == (s.verb != "FETCH"));
    CHECK(s.read == (s.verb == "FETCH"));
    if (s.verb == "FETCH") CHECK(s.blocking);
    for (const auto& a : s.acked) acked.push_back(a);
  }
  CHECK(acked == Strings{"1", "3", "2"}); // the ACKs and the TERM
  const auto re = replies(e);
  REQUIRE(re.size() == 5);
  CHECK(deliveredIds(re[0]) == Strings{"1"});
  CHECK(deliveredIds(re[1]) == Strings{"2"});
  CHECK(deliveredIds(re[2]) == Strings{"3"});
  CHECK(deliveredIds(re[3]) == Strings{"2"}); // redelivered after its NAK
  CHECK(re[4].empty_read);
  CHECK(re[4].summary == "408 Request Timeout");
  CHECK(re[0].delivered[0].fields == std::vector<std::pair<std::string, std::string>>{
                                         {"n", "1"}, {"wallet", "w1"}, {"amount", "5000"}, {"event_id", "e-1"}});
  CHECK(st.back().detail == "audit.done 3 handled");
}

} // namespace

TEST_CASE("nats captures: libnats pulls one message at a time and acknowledges each as recorded") {
  checkSession("libnats/session.cap");
}

TEST_CASE("nats captures: nats.js pulls one message at a time and acknowledges each as recorded") {
  checkSession("natsjs/session.cap");
}

TEST_CASE("nats captures: the server's INFO names no other address a client could connect to") {
  // One server, no cluster: no connect_urls, so a client knows no address but the proxy's.
  for (const char* file : {"libnats/session.cap", "natsjs/session.cap"}) {
    const auto chunks = loadCapture(file);
    REQUIRE(!chunks.empty());
    REQUIRE(!chunks[0].client);
    CHECK(chunks[0].bytes.rfind("INFO ", 0) == 0);
    CHECK(chunks[0].bytes.find("connect_urls") == std::string::npos);
  }
}
