// The AMQP 0-9-1 tracker on sessions recorded from real clients against RabbitMQ 3.10 (tests/captures/
// README.md: pika, amqplib, librabbitmq): the steps, the deliveries as pushes, acks by delivery tag (one
// with `multiple`), every split offset.
#include "replay.h"

#include "brokers/rabbitmq/tracker.h"
#include "brokers/rabbitmq/wire.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

using namespace idem::proxy;
using namespace idem::proxy::test;
using Strings = std::vector<std::string>;

namespace {

TrackerPtr fresh() { return idem::rabbitmq::makeTracker(); }

/// A method frame on channel 1 carrying `payload` (class, method, arguments).
std::string methodFrame(const std::string& payload) {
  std::string frame = std::string("\x01\x00\x01", 3);
  for (int shift : {24, 16, 8, 0}) frame += static_cast<char>((payload.size() >> shift) & 0xFF);
  return frame + payload + "\xce";
}

/// The server's channel.close of channel 1 with code 406 and `text`, naming basic.ack as the failed method.
std::string channelClose(const std::string& text) {
  return methodFrame(std::string("\x00\x14\x00\x28\x01\x96", 6) + static_cast<char>(text.size()) + text +
                     std::string("\x00\x3c\x00\x50", 4));
}

/// The server pushes, as "DELIVER <entry>".
Strings pushes(const Events& e) {
  Strings out;
  for (const auto& m : e.server)
    if (m.kind == ServerMsg::Kind::Push)
      for (const auto& d : m.reply.delivered) out.push_back(m.step.verb + " " + d.id);
  return out;
}

/// The client steps with what they acknowledge: "ACK m1", "ACK m2 m3".
Strings acks(const Events& e) {
  Strings out;
  for (const auto& s : steps(e)) {
    if (s.acked.empty() && s.verb != "ACK" && s.verb != "NACK" && s.verb != "REJECT") continue;
    std::string line = s.verb;
    for (const auto& a : s.acked) line += " " + a;
    for (const auto& r : s.returned) line += " back " + r;
    out.push_back(line);
  }
  return out;
}

/// Feeds a recorded session to `tracker` chunk by chunk, each direction's messages as they complete, until
/// `stop` says so of a server message; whether it did.
template <class Stop>
bool feedUntil(idem::proxy::Tracker& tracker, const std::vector<Chunk>& chunks, Stop stop) {
  std::string cin, sin;
  for (const auto& c : chunks) {
    std::string& in = c.client ? cin : sin;
    in += c.bytes;
    while (true) {
      if (c.client) {
        ClientMsg m;
        if (tracker.onClient(in, m) != idem::proxy::Decode::Message) break;
        in.erase(0, m.size);
      } else {
        ServerMsg m;
        if (tracker.onServer(in, m) != idem::proxy::Decode::Message) break;
        in.erase(0, m.size);
        if (stop(m)) return true;
      }
    }
  }
  return false;
}

/// A tracker fed the amqplib session up to its first delivery: m1, on channel 1, unacknowledged.
std::unique_ptr<idem::rabbitmq::AmqpTracker> holdingM1() {
  auto tracker = idem::rabbitmq::makeTracker();
  REQUIRE(feedUntil(*tracker, loadCapture("amqplib/session.cap"),
                    [](const ServerMsg& m) { return m.kind == ServerMsg::Kind::Push; }));
  REQUIRE(tracker->unacked() == std::set<std::string>{"m1"});
  return tracker;
}

std::string field(const EntryView& e, const std::string& k) {
  for (const auto& [key, v] : e.fields)
    if (key == k) return v;
  return "";
}

/// The recorded interleaving, whole and byte by byte, and split at every offset of every chunk, all decode
/// alike. (Not replay.h's checkSplitInvariance, which feeds one direction whole before the other: an AMQP
/// ack names delivery tags, so what it acknowledges depends on the deliveries before it.)
void requireSplitInvariance(const std::string& capture) {
  const auto chunks = loadCapture(capture);
  const Events whole = feedSession(fresh, chunks);
  // Every answered step ends by exactly one reply; every byte was decoded.
  const auto st = steps(whole);
  const auto answered = std::count_if(st.begin(), st.end(), [](const StepInfo& x) { return !x.oneWay; });
  CHECK(static_cast<size_t>(answered) == replies(whole).size());
  CHECK(!whole.client_invalid);
  CHECK(!whole.server_invalid);
  CHECK(whole.client_left == 0);
  CHECK(whole.server_left == 0);
  const auto wc = whole.lines(true), ws = whole.lines(false);
  const auto same = [&](const Events& e, const std::string& how) {
    INFO(how);
    REQUIRE(e.lines(true) == wc);
    REQUIRE(e.lines(false) == ws);
  };
  same(feedSession(fresh, chunks, 1), "byte by byte");
  same(feedSession(fresh, chunks, 7), "pieces of 7");
  for (size_t i = 0; i < chunks.size(); ++i)
    for (size_t at = 1; at < chunks[i].bytes.size(); ++at) {
      auto split = chunks;
      Chunk tail{chunks[i].client, chunks[i].bytes.substr(at)};
      split[i].bytes.resize(at);
      split.insert(split.begin() + static_cast<std::ptrdiff_t>(i) + 1, tail);
      same(feedSession(fresh, split), "chunk " + std::to_string(i) + " split at " + std::to_string(at));
    }
}

} // namespace

TEST_CASE("rabbitmq tracker: pika's session decodes alike at every split offset", "[rabbitmq]") {
  requireSplitInvariance("pika/session.cap");
}

TEST_CASE("rabbitmq tracker: amqplib's session decodes alike at every split offset", "[rabbitmq]") {
  requireSplitInvariance("amqplib/session.cap");
}

TEST_CASE("rabbitmq tracker: librabbitmq's session decodes alike at every split offset", "[rabbitmq]") {
  requireSplitInvariance("librabbitmq/session.cap");
}

TEST_CASE("rabbitmq tracker: pika's steps, pushes and a multiple ack", "[rabbitmq]") {
  Events e = feedSession(fresh, loadCapture("pika/session.cap"));
  CHECK(verbs(e) == Strings{"QUEUE_DECLARE", "PUBLISH", "PUBLISH", "PUBLISH", "QOS", "CONSUME", "ACK", "ACK", "CANCEL",
                            "PUBLISH", "GET", "REJECT", "GET", "ACK", "GET"});
  CHECK(pushes(e) == Strings{"DELIVER m1", "DELIVER m2", "DELIVER m3"});
  // The second ack names tag 3 with multiple: it settles m2 and m3. The reject requeues: it settles nothing
  // and hands its message back.
  CHECK(acks(e) == Strings{"ACK m1", "ACK m2 m3", "REJECT back m4", "ACK m4"});
  const auto r = replies(e);
  REQUIRE(r.size() == 7); // declare, qos, consume, cancel, three gets
  CHECK(r.back().empty_read);
  for (const auto& m : e.server)
    if (m.kind == ServerMsg::Kind::Push) {
      REQUIRE(m.reply.delivered.size() == 1);
      CHECK(field(m.reply.delivered[0], "wallet") == "w1");
      CHECK(field(m.reply.delivered[0], "event_id").size() == 2);
      CHECK(m.reply.waiting);
      CHECK(m.step.read);
    }
  for (const auto& s : steps(e)) CHECK(s.oneWay == (s.verb == "ACK" || s.verb == "REJECT" || s.verb == "PUBLISH"));
  // Only the session's set-up configures: the declare and the prefetch.
  for (const auto& s : steps(e)) CHECK(s.configures == (s.verb == "QUEUE_DECLARE" || s.verb == "QOS"));
}

TEST_CASE("rabbitmq tracker: a reject without requeue settles its message and discards it", "[rabbitmq]") {
  // pika's session with its basic.reject's requeue bit cleared (the last byte of the method's arguments).
  auto chunks = loadCapture("pika/session.cap");
  int flipped = 0;
  for (auto& c : chunks) {
    if (!c.client) continue;
    for (size_t at = c.bytes.find(std::string("\x00\x3c\x00\x5a", 4)); at != std::string::npos;
         at = c.bytes.find(std::string("\x00\x3c\x00\x5a", 4), at + 1)) {
      if (at < 7 || c.bytes[at - 7] != '\x01') continue; // a method frame's payload starts 7 bytes in
      const size_t bits = at + 4 + 8;                       // class, method, delivery tag
      REQUIRE(bits < c.bytes.size());
      CHECK(c.bytes[bits] == '\x01');
      c.bytes[bits] = '\x00';
      ++flipped;
    }
  }
  REQUIRE(flipped == 1);
  const Events e = feedSession(fresh, chunks);
  // The recorded server handed m4 out again; the tracker only reads what the client said of it.
  CHECK(acks(e) == Strings{"ACK m1", "ACK m2 m3", "REJECT m4", "ACK m4"});
  for (const auto& s : steps(e)) {
    CHECK(s.discards == (s.verb == "REJECT"));
    if (s.verb == "REJECT") CHECK(s.returned.empty());
  }
}

TEST_CASE("rabbitmq tracker: amqplib's nack with requeue, then its redelivery acked", "[rabbitmq]") {
  Events e = feedSession(fresh, loadCapture("amqplib/session.cap"));
  // The requeued message goes back to its place at the head of the queue: delivered again first.
  CHECK(pushes(e) == Strings{"DELIVER m1", "DELIVER m1", "DELIVER m2", "DELIVER m3"});
  // It settles nothing, and hands m1 back for redelivery.
  CHECK(acks(e) == Strings{"NACK back m1", "ACK m1", "ACK m2", "ACK m3"});
}

TEST_CASE("rabbitmq tracker: librabbitmq's consume, acks and an empty get", "[rabbitmq]") {
  Events e = feedSession(fresh, loadCapture("librabbitmq/session.cap"));
  CHECK(pushes(e) == Strings{"DELIVER m1", "DELIVER m2"});
  CHECK(acks(e) == Strings{"ACK m1", "ACK m2"});
  const auto s = summaries(e);
  REQUIRE(!s.empty());
  CHECK(s.back().rfind("empty: ", 0) == 0);
}

TEST_CASE("rabbitmq tracker: what a connection holds unacknowledged", "[rabbitmq]") {
  // The amqplib session cut right after its first delivery: m1 is held, until the nack gives it back.
  auto tracker = idem::rabbitmq::makeTracker();
  bool held = false;
  feedUntil(*tracker, loadCapture("amqplib/session.cap"), [&](const ServerMsg& m) {
    if (m.kind == ServerMsg::Kind::Push && !held) {
      CHECK(tracker->unacked() == std::set<std::string>{"m1"});
      held = true;
    }
    return false;
  });
  CHECK(held);
  CHECK(tracker->unacked().empty());
}

TEST_CASE("rabbitmq tracker: a channel.close the server sends of itself hands the channel's messages back", "[rabbitmq]") {
  // The amqplib session up to its first delivery (m1, channel 1, unacknowledged); then the server closes the
  // channel, as RabbitMQ does on an ack of a delivery tag the channel does not know.
  auto tracker = holdingM1();
  const std::string text = "PRECONDITION_FAILED - unknown delivery tag 4";
  const std::string frame = channelClose(text);
  ServerMsg close;
  REQUIRE(tracker->onServer(frame, close) == idem::proxy::Decode::Message);
  CHECK(close.size == frame.size());
  CHECK(close.kind == ServerMsg::Kind::Push);
  CHECK(close.step.verb == "CHANNEL_CLOSE");
  CHECK(close.step.returned == Strings{"m1"});
  CHECK(close.step.acked.empty());
  CHECK(close.reply.error);
  CHECK(close.reply.summary == "406 " + text);
  CHECK(tracker->unacked().empty());
  // With nothing left unacknowledged, another close passes unseen.
  ServerMsg again;
  REQUIRE(tracker->onServer(frame, again) == idem::proxy::Decode::Message);
  CHECK(again.kind == ServerMsg::Kind::Pass);
}

TEST_CASE("rabbitmq tracker: an ack of a delivery tag the channel does not hold acknowledges nothing until the "
          "channel is closed", "[rabbitmq]") {
  // RabbitMQ fails the whole method (406, unknown delivery tag), even a `multiple` one whose lower tags it
  // holds, closes the channel and ignores what the client sends on it until the close-ok.
  auto ack = [](uint64_t tag, bool multiple) {
    std::string payload("\x00\x3c\x00\x50", 4);
    for (int shift = 56; shift >= 0; shift -= 8) payload += static_cast<char>((tag >> shift) & 0xFF);
    return methodFrame(payload + static_cast<char>(multiple ? 1 : 0));
  };
  auto client = [](idem::rabbitmq::AmqpTracker& t, const std::string& frame) {
    ClientMsg m;
    REQUIRE(t.onClient(frame, m) == idem::proxy::Decode::Message);
    CHECK(m.size == frame.size());
    return m;
  };
  {
    auto tracker = holdingM1(); // m1 is delivery tag 1 of channel 1
    ClientMsg m = client(*tracker, ack(1, false));
    CHECK(m.step.acked == Strings{"m1"});
  }
  for (bool multiple : {false, true}) {
    INFO("multiple: " << multiple);
    auto tracker = holdingM1();
    ClientMsg bad = client(*tracker, ack(7, multiple));
    CHECK(bad.kind == ClientMsg::Kind::RequestEnd);
    CHECK(bad.step.verb == "ACK");
    CHECK(bad.step.acked.empty());
    CHECK(bad.step.detail.find("unknown delivery tag") != std::string::npos);
    ClientMsg late = client(*tracker, ack(1, false)); // sent before the client saw the close: ignored
    CHECK(late.step.acked.empty());
    CHECK(tracker->unacked() == std::set<std::string>{"m1"});
    ServerMsg close;
    const std::string frame = channelClose("PRECONDITION_FAILED - unknown delivery tag 7");
    REQUIRE(tracker->onServer(frame, close) == idem::proxy::Decode::Message);
    CHECK(close.step.returned == Strings{"m1"});
    CHECK(tracker->unacked().empty());
  }
}

TEST_CASE("rabbitmq tracker: a channel.close answering a request hands the channel's messages back with it", "[rabbitmq]") {
  // m1 delivered on channel 1 and unacknowledged; the client asks for a prefetch of 10 (basic.qos) on that
  // channel, and the server answers with a close of the channel: the request failed, m1 goes back.
  auto tracker = holdingM1();
  const std::string qos = methodFrame(std::string("\x00\x3c\x00\x0a\x00\x00\x00\x00\x00\x0a\x00", 11));
  ClientMsg ask;
  REQUIRE(tracker->onClient(qos, ask) == idem::proxy::Decode::Message);
  REQUIRE(ask.kind == ClientMsg::Kind::RequestEnd);
  const std::string text = "PRECONDITION_FAILED - prefetch refused";
  const std::string frame = channelClose(text);
  ServerMsg close;
  REQUIRE(tracker->onServer(frame, close) == idem::proxy::Decode::Message);
  CHECK(close.kind == ServerMsg::Kind::ReplyEnd);
  CHECK(close.reply.error);
  CHECK(close.reply.summary == "406 " + text);
  CHECK(close.reply.returned == Strings{"m1"});
  CHECK(tracker->unacked().empty());
}

TEST_CASE("rabbitmq tracker: bytes that are no AMQP are refused", "[rabbitmq]") {
  auto t = fresh();
  ClientMsg m;
  CHECK(t->onClient("GET / HTTP/1.1\r\n", m) == idem::proxy::Decode::Invalid);
  auto u = fresh();
  CHECK(u->onClient(std::string_view("AMQP\0\0\x09\x01", 8), m) == idem::proxy::Decode::Message);
  CHECK(u->onClient(std::string_view("\x01\x00\x00\x00\x00\x00\x04\x00\x0a\x00\x33\x00", 12), m) ==
        idem::proxy::Decode::Invalid); // no frame-end octet
}

TEST_CASE("rabbitmq tracker: the connection.close of an error fault is a broker's error answer", "[rabbitmq]") {
  const std::string frame = idem::rabbitmq::connectionClose(320, "CONNECTION_FORCED - shutdown", idem::rabbitmq::methodId(60, 80));
  idem::rabbitmq::Frame f;
  REQUIRE(idem::rabbitmq::readFrame(frame, f) == idem::rabbitmq::Framed::Whole);
  CHECK(f.size == frame.size());
  CHECK(f.channel == 0);
  auto m = idem::rabbitmq::readMethod(f.payload);
  REQUIRE(m);
  CHECK(m->id == idem::rabbitmq::methods::ConnectionClose);
  CHECK(m->replyCode == 320);
  CHECK(m->replyText == "CONNECTION_FORCED - shutdown");
}

TEST_CASE("rabbitmq tracker: a basic.consume with no-ack is a connection whose deliveries settle themselves", "[rabbitmq]") {
  // pika's auto_ack=True: basic.consume (60, 20) of queue "q", tag "t", bits no-ack (2), an empty table.
  const auto consume = [](char bits) {
    return methodFrame(std::string("\x00\x3c\x00\x14\x00\x00\x01q\x01t", 10) + bits + std::string(4, '\0'));
  };
  for (const auto& [bits, settles] : std::vector<std::pair<char, bool>>{{'\x00', false}, {'\x02', true}}) {
    auto t = idem::rabbitmq::makeTracker();
    ClientMsg m;
    REQUIRE(t->onClient(std::string_view("AMQP\0\0\x09\x01", 8), m) == idem::proxy::Decode::Message);
    CHECK_FALSE(t->settlesOnDelivery());
    ClientMsg ask;
    REQUIRE(t->onClient(consume(bits), ask) == idem::proxy::Decode::Message);
    CHECK(ask.step.detail == std::string("CONSUME q") + (settles ? " no-ack" : ""));
    CHECK(t->settlesOnDelivery() == settles);
  }
}

TEST_CASE("rabbitmq tracker: a channel.close the client sends holding messages hands them back in a step", "[rabbitmq]") {
  // m1 delivered on channel 1 and unacknowledged; the client closes the channel (the RabbitMQ Java client's
  // default handler does so when a consumer's handleDelivery throws): the broker requeues m1, so the process
  // no longer holds it. With nothing held, a close is set-up and no step.
  auto tracker = holdingM1();
  const std::string text = "Closed due to exception from Consumer";
  const std::string frame = methodFrame(std::string("\x00\x14\x00\x28\x00\xc8", 6) + static_cast<char>(text.size()) +
                                        text + std::string("\x00\x00\x00\x00", 4));
  for (size_t cut = 1; cut < frame.size(); ++cut) { // a frame split anywhere is no message yet
    ClientMsg part;
    CHECK(tracker->onClient(std::string_view(frame).substr(0, cut), part) == idem::proxy::Decode::NeedMoreData);
  }
  ClientMsg close;
  REQUIRE(tracker->onClient(frame, close) == idem::proxy::Decode::Message);
  CHECK(close.size == frame.size());
  REQUIRE(close.kind == ClientMsg::Kind::RequestEnd);
  CHECK(close.step.verb == "CHANNEL_CLOSE");
  CHECK(close.step.returned == Strings{"m1"});
  CHECK(close.step.acked.empty());
  CHECK(close.step.oneWay);
  CHECK(tracker->unacked().empty());
  ClientMsg again;
  REQUIRE(tracker->onClient(frame, again) == idem::proxy::Decode::Message);
  CHECK(again.kind != ClientMsg::Kind::RequestEnd);
}

TEST_CASE("rabbitmq tracker: a basic.recover with requeue hands the channel's messages back", "[rabbitmq]") {
  auto tracker = holdingM1();
  const std::string frame = methodFrame(std::string("\x00\x3c\x00\x6e\x01", 5)); // basic.recover, requeue
  ClientMsg recover;
  REQUIRE(tracker->onClient(frame, recover) == idem::proxy::Decode::Message);
  REQUIRE(recover.kind == ClientMsg::Kind::RequestEnd);
  CHECK(recover.step.verb == "RECOVER");
  CHECK(recover.step.returned == Strings{"m1"});
  CHECK(tracker->unacked().empty());
}

TEST_CASE("rabbitmq tracker: what a connection that ends holds unacknowledged goes back to the broker", "[rabbitmq]") {
  // The amqplib session up to its first delivery: m1 unacknowledged, so a cut there hands m1 back; acked or
  // handed back in a step (the rest of the session: its nack with requeue), nothing is left to hand back.
  CHECK(idem::rabbitmq::makeTracker()->returnedAtEnd().empty());
  auto tracker = holdingM1();
  CHECK(tracker->returnedAtEnd() == Strings{"m1"});
  auto whole = idem::rabbitmq::makeTracker();
  feedUntil(*whole, loadCapture("amqplib/session.cap"), [](const ServerMsg&) { return false; });
  CHECK(whole->returnedAtEnd().empty());
}

TEST_CASE("rabbitmq tracker: in a channel transaction an ack takes effect at tx.commit, and tx.rollback or the "
          "channel's end undoes it", "[rabbitmq]") {
  // pika's tx_select(), Spring AMQP's transacted channels: basic.ack inside the transaction, tx.commit after
  // the effect's COMMIT. Until tx.commit the broker holds the message unacknowledged.
  auto frame = [](char method) { return methodFrame(std::string("\x00\x5a\x00", 3) + method); };
  const std::string select = frame('\x0a'), commit = frame('\x14'), rollback = frame('\x1e');
  std::string ack1("\x00\x3c\x00\x50", 4);
  ack1 += std::string(7, '\0') + '\x01' + '\0'; // delivery tag 1, not multiple
  auto client = [](idem::rabbitmq::AmqpTracker& t, const std::string& bytes) {
    ClientMsg m;
    REQUIRE(t.onClient(bytes, m) == idem::proxy::Decode::Message);
    CHECK(m.size == bytes.size());
    return m;
  };
  {
    auto tracker = holdingM1(); // m1 is delivery tag 1 of channel 1
    CHECK(client(*tracker, select).step.verb == "TX_SELECT");
    ClientMsg ack = client(*tracker, methodFrame(ack1));
    CHECK(ack.step.verb == "ACK");
    CHECK(ack.step.acked.empty()); // not yet
    CHECK(ack.step.detail.find("TX_COMMIT") != std::string::npos);
    CHECK(tracker->unacked() == std::set<std::string>{"m1"});
    ClientMsg done = client(*tracker, commit);
    CHECK(done.step.verb == "TX_COMMIT");
    CHECK(done.step.acked == Strings{"m1"});
    CHECK_FALSE(done.step.discards);
    CHECK(tracker->unacked().empty());
  }
  {
    auto tracker = holdingM1();
    client(*tracker, select);
    client(*tracker, methodFrame(ack1));
    CHECK(client(*tracker, rollback).step.acked.empty());
    CHECK(tracker->unacked() == std::set<std::string>{"m1"}); // unacknowledged on the channel again
    CHECK(client(*tracker, methodFrame(ack1)).step.acked.empty()); // the channel is still transactional
    CHECK(client(*tracker, commit).step.acked == Strings{"m1"});
  }
  {
    auto tracker = holdingM1();
    client(*tracker, select);
    ServerMsg ok;
    REQUIRE(tracker->onServer(frame('\x0b'), ok) == idem::proxy::Decode::Message); // tx.select-ok
    client(*tracker, methodFrame(ack1));
    ServerMsg close; // the channel ends: its open transaction rolls back, and the message goes back
    REQUIRE(tracker->onServer(channelClose("PRECONDITION_FAILED - something"), close) == idem::proxy::Decode::Message);
    CHECK(close.step.returned == Strings{"m1"});
    CHECK(tracker->unacked().empty());
  }
}
