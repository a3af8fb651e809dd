// The NATS tracker on sessions written byte for byte: pull requests and their answers (a message, a
// 404 or 408 status, a heartbeat that answers nothing), the acknowledgements, a consumer's own publish,
// and the deliveries it refuses to account for. Every session is also fed at every split offset.
#include "replay.h"

#include "brokers/nats/tracker.h"

#include <catch2/catch.hpp>

using namespace idem::proxy;
using namespace idem::proxy::test;
using Strings = std::vector<std::string>;

namespace {

TrackerPtr fresh() { return idem::nats::makeTracker(); }

std::vector<Chunk> chunksOf(const std::vector<std::string>& client, const std::vector<std::string>& server) {
  std::vector<Chunk> out;
  for (const auto& c : client) out.push_back({true, c});
  for (const auto& s : server) out.push_back({false, s});
  return out;
}

Events session(const std::vector<std::string>& client, const std::vector<std::string>& server) {
  const auto c = chunksOf(client, server);
  checkSplitInvariance(fresh, c);
  return wholeOf(fresh, c);
}

std::string pub(const std::string& subject, const std::string& reply, const std::string& payload) {
  return "PUB " + subject + (reply.empty() ? "" : " " + reply) + " " + std::to_string(payload.size()) + "\r\n" +
         payload + "\r\n";
}

std::string hmsg(const std::string& subject, const std::string& sid, const std::string& reply,
                 const std::string& headers, const std::string& payload) {
  return "HMSG " + subject + " " + sid + (reply.empty() ? "" : " " + reply) + " " + std::to_string(headers.size()) +
         " " + std::to_string(headers.size() + payload.size()) + "\r\n" + headers + payload + "\r\n";
}

const std::string kInfo = "INFO {\"server_id\":\"X\",\"version\":\"2.9.10\",\"headers\":true,\"max_payload\":1048576}\r\n";
const std::string kPull = "$JS.API.CONSUMER.MSG.NEXT.events_1.consumers_1";
const std::string kAck = "$JS.ACK.events_1.consumers_1.1.3.1.1700000000000000000.0";

} // namespace

TEST_CASE("nats tracker: a pull request's message is its FETCH's reply, named by its stream sequence") {
  const std::string delivery =
      hmsg("events.1", "1", kAck, "NATS/1.0\r\nNats-Msg-Id: m1\r\nevent_id: e-3\r\n\r\n",
           "{\"n\":\"3\",\"wallet\":\"w1\",\"amount\":\"5000\"}");
  const Events e = session({"CONNECT {\"verbose\":false,\"auth_token\":\"t\"}\r\nPING\r\n", "SUB _INBOX.a.* 1\r\n",
                            pub(kPull, "_INBOX.a.b", "{\"batch\":1,\"expires\":90000000}"), pub(kAck, "_INBOX.a.c", "+ACK")},
                           {kInfo, "PONG\r\n", delivery, "MSG _INBOX.a.c 1 0\r\n\r\n"});
  requireBalanced(e);
  const auto st = steps(e);
  REQUIRE(st.size() == 2);
  CHECK(st[0].verb == "FETCH");
  CHECK(st[0].read);
  CHECK(st[0].blocking);
  CHECK(!st[0].oneWay);
  CHECK(st[1].verb == "ACK");
  CHECK(st[1].oneWay);
  CHECK(st[1].acked == Strings{"3"});
  const auto re = replies(e);
  REQUIRE(re.size() == 1);
  CHECK(deliveredIds(re[0]) == Strings{"3"});
  CHECK(re[0].delivered[0].fields == std::vector<std::pair<std::string, std::string>>{
                                         {"n", "3"}, {"wallet", "w1"}, {"amount", "5000"}, {"event_id", "e-3"}});
}

TEST_CASE("nats tracker: a pull answered 404 or 408 is an empty read and a heartbeat answers nothing") {
  const Events e = session({pub(kPull, "_INBOX.p.1", "{\"batch\":1,\"no_wait\":true}"),
                            pub(kPull, "_INBOX.p.2", "{\"batch\":1,\"expires\":1000000000,\"idle_heartbeat\":500000000}")},
                           {hmsg("_INBOX.p.1", "2", "", "NATS/1.0 404 No Messages\r\n\r\n", ""),
                            hmsg("_INBOX.p.2", "2", "", "NATS/1.0 100 Idle Heartbeat\r\n\r\n", ""),
                            hmsg("_INBOX.p.2", "2", "", "NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 1\r\n\r\n", "")});
  requireBalanced(e);
  const auto st = steps(e);
  REQUIRE(st.size() == 2);
  CHECK(!st[0].blocking);
  CHECK(st[1].blocking);
  CHECK(summaries(e) == Strings{"empty: 404 No Messages", "empty: 408 Request Timeout"});
}

TEST_CASE("nats tracker: an error status after a batch's messages is a step the server pushes, its end is none") {
  // A forget makes the durable anew: the pull still open after its first message gets 409 Consumer Deleted,
  // and nats.js throws it at the consumer. A 408 that ends a batch early is no step.
  const Events e = session({pub(kPull, "_INBOX.p.1", "{\"batch\":10,\"expires\":1000000000}"),
                            pub(kPull, "_INBOX.p.2", "{\"batch\":10,\"expires\":1000000000}")},
                           {hmsg("_INBOX.p.1", "2", kAck, "", "{\"event_id\":\"e1\"}"),
                            hmsg("_INBOX.p.1", "2", "", "NATS/1.0 408 Request Timeout\r\n\r\n", ""),
                            hmsg("_INBOX.p.2", "2", kAck, "", "{\"event_id\":\"e2\"}"),
                            hmsg("_INBOX.p.2", "2", "", "NATS/1.0 409 Consumer Deleted\r\n\r\n", "")});
  requireBalanced(e);
  CHECK(steps(e).size() == 2);
  std::vector<ServerMsg> pushes;
  for (const auto& m : e.server)
    if (m.kind == ServerMsg::Kind::Push) pushes.push_back(m);
  REQUIRE(pushes.size() == 1);
  CHECK(pushes[0].step.verb == "FETCH");
  CHECK(pushes[0].step.detail == "409 Consumer Deleted: ends a pull request for 10 after 1 message");
  CHECK(pushes[0].reply.error);
  CHECK(pushes[0].reply.empty_read);
  CHECK(pushes[0].reply.summary == "409 Consumer Deleted");
}

TEST_CASE("nats tracker: a no_wait pull with an expiry waits until it expires: a blocking read (nats.go's Fetch)") {
  // nats.go 1.22's sub.Fetch(10) pulls {"expires":…,"batch":10,"no_wait":true}; nats-server 2.9 holds it
  // until it expires and answers 408, as it does a pull without no_wait.
  const Events e = session({pub(kPull, "_INBOX.p.1", "{\"expires\":4989992475,\"batch\":10,\"no_wait\":true}"),
                            pub(kPull, "_INBOX.p.2", "{\"expires\":0,\"batch\":10,\"no_wait\":true}")},
                           {hmsg("_INBOX.p.1", "2", "", "NATS/1.0 408 Request Timeout\r\n\r\n", ""),
                            hmsg("_INBOX.p.2", "2", "", "NATS/1.0 404 No Messages\r\n\r\n", "")});
  requireBalanced(e);
  const auto st = steps(e);
  REQUIRE(st.size() == 2);
  CHECK(st[0].blocking);
  CHECK(!st[1].blocking);
  CHECK(summaries(e) == Strings{"empty: 408 Request Timeout", "empty: 404 No Messages"});
}

TEST_CASE("nats tracker: NAK and WPI and TERM are steps of their own, TERM settles as ACK does but discards, NAK hands back") {
  const std::string ack11 = "$JS.ACK.dom.ABCDEF.events_1.consumers_1.2.11.5.1700000000000000000.0.tok";
  const Events e = session({pub(kAck, "", "-NAK"), pub(kAck, "", "+WPI"), pub(ack11, "", "+TERM"), pub(kAck, "", ""),
                            "HPUB " + kAck + " 12 16\r\nNATS/1.0\r\n\r\n+ACK\r\n"},
                           {});
  requireBalanced(e);
  CHECK(verbs(e) == Strings{"NAK", "WPI", "TERM", "ACK", "ACK"});
  const auto st = steps(e);
  CHECK(st[0].acked.empty());
  CHECK(st[0].returned == Strings{"3"});
  CHECK(st[1].returned.empty());
  CHECK(st[2].acked == Strings{"11"});
  CHECK(st[2].returned.empty());
  for (size_t i = 0; i < st.size(); ++i) CHECK(st[i].discards == (i == 2)); // only TERM drops what it settles
  CHECK(st[3].acked == Strings{"3"});
  CHECK(st[4].acked == Strings{"3"});
}

TEST_CASE("nats tracker: a consumer's own publish is PUB while the JetStream API is set-up and no step") {
  const Events e = session({pub("audit.credits", "", "w1 +5000"), pub("$JS.API.CONSUMER.INFO.events_1.consumers_1", "_INBOX.r.1", ""),
                            "UNSUB 1\r\n", "PONG\r\n"},
                           {"MSG _INBOX.r.1 3 5\r\n{...}\r\n", "PING\r\n", "+OK\r\n", "-ERR 'Unknown Protocol Operation'\r\n"});
  requireBalanced(e);
  CHECK(verbs(e) == Strings{"PUB"});
  CHECK(steps(e)[0].oneWay);
  CHECK(steps(e)[0].detail == "audit.credits w1 +5000");
}

TEST_CASE("nats tracker: a batch's later messages are FETCH steps the server pushes, its first the reply") {
  // libnats natsSubscription_Fetch(…, 3, …): one pull of 3 on an inbox of its own.
  auto d = [](int seq) {
    return hmsg("events.1", "1", "$JS.ACK.events_1.consumers_1.1." + std::to_string(seq) + "." + std::to_string(seq) +
                                     ".1700000000000000000.0",
                "NATS/1.0\r\n\r\n", "{\"n\":\"" + std::to_string(seq) + "\"}");
  };
  const Events e = session({"SUB _INBOX.b.* 1\r\n", pub(kPull, "_INBOX.b.1", "{\"batch\":3,\"expires\":5000000000}")},
                           {d(1), d(2), d(3), hmsg("_INBOX.b.1", "1", "", "NATS/1.0 408 Request Timeout\r\n\r\n", "")});
  requireBalanced(e);
  REQUIRE(verbs(e) == Strings{"FETCH"});
  std::vector<ServerMsg> pushes;
  for (const auto& m : e.server)
    if (m.kind == ServerMsg::Kind::Push) pushes.push_back(m);
  const auto re = replies(e);
  REQUIRE(re.size() == 1);
  CHECK(deliveredIds(re[0]) == Strings{"1"});
  CHECK(re[0].waiting); // the pull is open for two more
  REQUIRE(pushes.size() == 2);
  CHECK(pushes[0].step.verb == "FETCH");
  CHECK(pushes[0].step.read);
  CHECK(pushes[0].step.detail == "MSG events.1 2: message 2 of a pull request for 3");
  CHECK(deliveredIds(pushes[0].reply) == Strings{"2"});
  CHECK(pushes[0].reply.waiting);
  CHECK(deliveredIds(pushes[1].reply) == Strings{"3"});
  CHECK(!pushes[1].reply.waiting); // the batch is full: the pull is over, and the 408 after it answers nothing
  CHECK(e.server.back().kind == ServerMsg::Kind::Pass);
}

TEST_CASE("nats tracker: consume()'s pulls on one inbox, topped up while one is open, end in order") {
  // nats.js consumer.consume(): pulls of 100 to one inbox, the next sent while the first is still open; the
  // server fills the oldest first, and a status ends the oldest.
  const std::string inbox = "_INBOX.Q7";
  auto d = [&](int seq) {
    return hmsg("events.1", "1", "$JS.ACK.events_1.consumers_1.1." + std::to_string(seq) + "." + std::to_string(seq) +
                                     ".1700000000000000000.0",
                "NATS/1.0\r\nevent_id: e-" + std::to_string(seq) + "\r\n\r\n", "{}");
  };
  const std::string pull100 = "{\"batch\":100,\"max_bytes\":0,\"idle_heartbeat\":15000000000,\"expires\":30000000000}";
  const Events e = session({"SUB " + inbox + " 1\r\n", pub(kPull, inbox, pull100), pub(kPull, inbox, pull100)},
                           {d(1), d(2), hmsg(inbox, "1", "", "NATS/1.0 100 Idle Heartbeat\r\n\r\n", ""),
                            hmsg(inbox, "1", "", "NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 98\r\n\r\n", ""),
                            d(3), hmsg(inbox, "1", "", "NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 99\r\n\r\n", "")});
  requireBalanced(e);
  std::vector<std::string> kinds;
  for (const auto& m : e.server) {
    std::string k = m.kind == ServerMsg::Kind::ReplyEnd ? "reply" : m.kind == ServerMsg::Kind::Push ? "push" : "pass";
    if (!m.reply.delivered.empty()) k += " " + m.reply.delivered.front().id;
    kinds.push_back(k);
  }
  // 1 answers the first pull (its FETCH), 2 is the first pull's second message (pushed), the heartbeat and
  // the first pull's 408 answer nothing, 3 answers the second pull, whose 408 ends it.
  CHECK(kinds == Strings{"reply 1", "push 2", "pass", "pass", "reply 3", "pass"});
}

TEST_CASE("nats tracker: a delivery no pull request waits for leaves the connection unobserved") {
  const std::string d = hmsg("_INBOX.push", "4", kAck, "NATS/1.0\r\n\r\n", "{}");
  SECTION("a push consumer's") {
    const Events e = wholeOf(fresh, chunksOf({"SUB events.1 4\r\n"}, {d}));
    CHECK(e.server_invalid);
  }
  SECTION("a third message of a batch of two") {
    const Events e = wholeOf(fresh, chunksOf({pub(kPull, "_INBOX.push", "{\"batch\":2}")}, {d, d, d}));
    CHECK(e.server_invalid);
    CHECK(e.server.size() == 2);
  }
  SECTION("an answer to a pull while an older one, to another inbox, waits unanswered") {
    const Events e = wholeOf(fresh, chunksOf({pub(kPull, "_INBOX.one", "{\"batch\":1}"), pub(kPull, "_INBOX.push", "{\"batch\":1}")}, {d}));
    CHECK(e.server_invalid);
  }
}

TEST_CASE("nats tracker: a refused delivery says why in words, bytes that are no NATS say nothing") {
  const std::string d = hmsg("_INBOX.push", "4", kAck, "NATS/1.0\r\n\r\n", "{}");
  auto refusalAfter = [&](const std::string& client, const std::string& server) {
    TrackerPtr t = fresh();
    idem::proxy::ClientMsg c;
    for (std::string_view rest = client; !rest.empty(); rest.remove_prefix(c.size))
      REQUIRE(t->onClient(rest, c) == idem::proxy::Decode::Message);
    idem::proxy::ServerMsg m;
    CHECK(t->onServer(server, m) == idem::proxy::Decode::Invalid);
    return t->refusal();
  };
  CHECK(refusalAfter(pub(kPull, "_INBOX.one", "{\"batch\":1}") + pub(kPull, "_INBOX.push", "{\"batch\":5}"), d)
            .find("while an older one, to another inbox, waits unanswered") != std::string::npos);
  CHECK(refusalAfter("SUB events.1 4\r\n", d).find("that answers no pull request (a push consumer)") != std::string::npos);
  CHECK(refusalAfter("", "MSG a 1 x\r\n").empty());
}

TEST_CASE("nats tracker: what is not the NATS protocol is refused") {
  CHECK(wholeOf(fresh, chunksOf({"GET / HTTP/1.1\r\n"}, {})).client_invalid);
  CHECK(wholeOf(fresh, chunksOf({"PUB a 5\r\nabcdefg\r\n"}, {})).client_invalid); // the payload is not 5 bytes
  CHECK(wholeOf(fresh, chunksOf({"PUB a b c 5\r\nabcde\r\n"}, {})).client_invalid);
  CHECK(wholeOf(fresh, chunksOf({}, {"MSG a 1 x\r\n"})).server_invalid);
}

TEST_CASE("nats tracker: $JS.ACK subjects of both layouts name the stream sequence") {
  auto a = idem::nats::parseAckSubject(kAck);
  REQUIRE(a);
  CHECK(a->stream == "events_1");
  CHECK(a->consumer == "consumers_1");
  CHECK(a->streamSeq == 3);
  auto b = idem::nats::parseAckSubject("$JS.ACK._.HASH.s.c.1.42.7.1700000000000000000.3");
  REQUIRE(b);
  CHECK(b->streamSeq == 42);
  CHECK(!idem::nats::parseAckSubject("$JS.ACK.s.c.1"));
  CHECK(!idem::nats::parseAckSubject("events.1"));
}

TEST_CASE("nats tracker: an error answer refuses the publish as the server's permissions would") {
  CHECK(idem::nats::errorAnswer("HMSG events.1 1 $JS.ACK.a.b.1.2.2.1.0 12 14\r\nNATS/1.0\r\n\r\n{}\r\n",
                                idem::nats::kPermissionsViolation) ==
        "-ERR 'Permissions Violation for Subscription to \"events.1\"'\r\n");
  CHECK(idem::nats::errorAnswer(pub(kAck, "", "+ACK"), "PERMISSIONS_VIOLATION") ==
        "-ERR 'Permissions Violation for Publish to \"" + kAck + "\"'\r\n");
  CHECK(idem::nats::errorAnswer("HPUB events.1 _INBOX.x 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", "PERMISSIONS_VIOLATION") ==
        std::optional<std::string>("-ERR 'Permissions Violation for Publish to \"events.1\"'\r\n"));
  CHECK(!idem::nats::errorAnswer(pub(kAck, "", "+ACK"), "LOADING"));
  CHECK(!idem::nats::errorAnswer("SUB a 1\r\n", "PERMISSIONS_VIOLATION"));
}

TEST_CASE("nats tracker: a cluster's peers in INFO are left out, so clients reconnect through the proxy") {
  const std::string withPeers =
      "INFO {\"server_id\":\"N1\",\"port\":4222,\"connect_urls\":[\"10.0.0.2:4222\",\"10.0.0.3:4222\"],"
      "\"ws_connect_urls\":[\"10.0.0.2:8080\"],\"jetstream\":true}\r\n";
  auto t = fresh();
  ServerMsg out;
  REQUIRE(t->onServer(withPeers, out) == Decode::Message);
  CHECK(out.size == withPeers.size());
  CHECK(out.kind == ServerMsg::Kind::Pass);
  REQUIRE(out.replacement.rfind("INFO {", 0) == 0);
  CHECK(out.replacement.substr(out.replacement.size() - 2) == "\r\n");
  const auto j = nlohmann::json::parse(out.replacement.substr(5));
  CHECK(j == nlohmann::json{{"server_id", "N1"}, {"port", 4222}, {"jetstream", true}});
  // A lone server's INFO passes as it is, as does one whose JSON does not parse.
  for (const std::string info : {"INFO {\"server_id\":\"N1\",\"port\":4222}\r\n", "INFO {\"connect_urls\":[\r\n"}) {
    ServerMsg plain;
    REQUIRE(t->onServer(info, plain) == Decode::Message);
    CHECK(plain.replacement.empty());
  }
}

TEST_CASE("nats tracker: a pull whose inbox the client unsubscribed ends as one the server skipped when a "
          "younger pull is answered first") {
  // nats.js 3's fetch() after two missed heartbeats (its pull held at the proxy): UNSUB of its inbox, then a
  // pull on a new one, which the server answers.
  const std::string pullBody = "{\"batch\":10,\"expires\":1000000000,\"idle_heartbeat\":500000000}";
  const std::vector<std::string> client = {"SUB _INBOX.a 1\r\n", pub(kPull, "_INBOX.a", pullBody), "UNSUB 1\r\n",
                                           "SUB _INBOX.b 2\r\n", pub(kPull, "_INBOX.b", pullBody)};
  // A message of a pull names the stream's subject and the sid of the inbox's subscription.
  auto d = [](const std::string& sid, int seq) {
    return hmsg("events.1", sid, "$JS.ACK.events_1.consumers_1.1." + std::to_string(seq) + "." + std::to_string(seq) +
                                     ".1700000000000000000.0",
                "NATS/1.0\r\n\r\n", "{\"n\":\"" + std::to_string(seq) + "\"}");
  };
  {
    INFO("the server answers the new pull only: the old one's step ends with it, skipped");
    const Events e = session(client, {d("2", 1), d("2", 2)});
    requireBalanced(e);
    REQUIRE(verbs(e) == Strings{"FETCH", "FETCH"});
    const auto re = replies(e);
    REQUIRE(re.size() == 1);
    CHECK(deliveredIds(re[0]) == Strings{"1"});
    std::vector<ServerMsg> ends;
    for (const auto& m : e.server)
      if (m.kind == ServerMsg::Kind::ReplyEnd) ends.push_back(m);
    REQUIRE(ends.size() == 1);
    CHECK(ends[0].skipped == 1);
  }
  {
    INFO("the server answers the old pull first: read as its answer, in order");
    const Events e = session(client, {d("1", 1), d("2", 2)});
    requireBalanced(e);
    const auto re = replies(e);
    REQUIRE(re.size() == 2);
    CHECK(deliveredIds(re[0]) == Strings{"1"});
    CHECK(deliveredIds(re[1]) == Strings{"2"});
  }
  {
    INFO("a pull whose inbox is still read is never skipped: an answer to a younger one is refused");
    const std::vector<std::string> kept = {"SUB _INBOX.a 1\r\n", pub(kPull, "_INBOX.a", pullBody),
                                           "SUB _INBOX.b 2\r\n", pub(kPull, "_INBOX.b", pullBody)};
    CHECK(wholeOf(fresh, chunksOf(kept, {d("2", 1)})).server_invalid);
  }
}
