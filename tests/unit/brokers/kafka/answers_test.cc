// Messages the proxy sends in a party's place: a broker's error answer to any step request (the error
// fault), and the LeaveGroup of a member it killed, with the membership the tracker learnt.
#include "bodies.h"

#include "brokers/kafka/answers.h"
#include "brokers/kafka/tracker.h"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace idem::kafka;
using namespace idem::kafka::test;
using namespace idem::proxy;
using namespace idem::proxy::test;

namespace {

/// Feeds `request` then `answer` to a fresh tracker; the answer's reply.
ReplyInfo replyTo(const std::string& request, const std::string& answer) {
  TrackerPtr t = makeTracker();
  ClientMsg c;
  REQUIRE(t->onClient(request, c) == Decode::Message);
  REQUIRE(c.kind == ClientMsg::Kind::RequestEnd);
  ServerMsg s;
  REQUIRE(t->onServer(answer, s) == Decode::Message);
  CHECK(s.size == answer.size());
  REQUIRE(s.kind == ServerMsg::Kind::ReplyEnd);
  return s.reply;
}

void checkFails(const std::string& request, int16_t code, const std::string& name) {
  const auto answer = errorResponse(request, code);
  REQUIRE(answer);
  const ReplyInfo r = replyTo(request, *answer);
  CHECK(r.error);
  CHECK(r.summary.find(name) != std::string::npos);
  CHECK(r.delivered.empty());
}

} // namespace

TEST_CASE("kafka answers: an error answer to every step request the recorded clients sent") {
  size_t answered = 0;
  for (const char* client : {"librdkafka", "kafkajs"}) {
    for (const auto& e : std::filesystem::directory_iterator(std::string(IDEM_SOURCE_DIR) + "/tests/captures/" + client)) {
      const std::string file = std::string(client) + "/" + e.path().filename().string();
      const auto chunks = loadCapture(file);
      const std::string bytes = joinDirection(chunks, true);
      Feeder f(makeTracker());
      f.client(bytes);
      size_t at = 0;
      for (const ClientMsg& m : f.events().client) {
        const std::string frame = bytes.substr(at, m.size);
        at += m.size;
        if (m.kind != ClientMsg::Kind::RequestEnd) {
          CHECK(!errorResponse(frame, 27)); // set-up requests get no fault
          continue;
        }
        INFO(file << ": " << m.step.detail);
        checkFails(frame, 27, "REBALANCE_IN_PROGRESS");
        ++answered;
      }
    }
  }
  CHECK(answered > 40);
}

TEST_CASE("kafka answers: flexible versions, per partition and per group") {
  for (int v = 0; v <= 9; ++v) {
    INFO("OffsetCommit v" << v);
    const std::string req = request(api::kOffsetCommit, v, 5, offsetCommitRequest(std::max(v, 2), "t", {{0, 1}, {2, 7}}));
    if (v < 2) continue; // (the body builder writes versions 2 and up)
    const auto answer = errorResponse(req, 22);
    REQUIRE(answer);
    CHECK(replyTo(req, *answer).summary == "t-0: ILLEGAL_GENERATION; t-2: ILLEGAL_GENERATION");
  }
  for (int v = 4; v <= 17; ++v) {
    INFO("Fetch v" << v);
    const std::string topic = v >= 13 ? std::string(16, '\x03') : "t";
    checkFails(request(api::kFetch, v, 5, fetchRequest(v, {{topic, 1, 4}})), 16, "NOT_COORDINATOR");
  }
  CHECK(!errorResponse(request(api::kMetadata, 9, 1, ""), 27)); // set-up: no step, no fault
  CHECK(!errorResponse("short", 27));
}

TEST_CASE("kafka answers: LeaveGroup for a killed member, every version, as the tracker reads it") {
  for (int16_t v = 0; v <= 5; ++v) {
    INFO("LeaveGroup v" << v);
    Membership m{"g1", "m-7", std::nullopt, 3, "c2", v};
    const std::string req = leaveGroupRequest(m, 99);
    Feeder f(makeTracker());
    f.client(req);
    const Events e = f.events();
    REQUIRE(!e.client_invalid);
    REQUIRE(e.client_left == 0);
    REQUIRE(steps(e).size() == 1);
    CHECK(steps(e)[0].verb == "LEAVE_GROUP");
    CHECK(steps(e)[0].detail == "LeaveGroup v" + std::to_string(v) + " group g1 member m-7");
  }
}

TEST_CASE("kafka answers: the membership a consumer's group connection shows") {
  const auto chunks = loadCapture("librdkafka/session-4.cap"); // the group coordinator connection
  TrackerPtr t = makeTracker(); // fed as the proxy feeds it, in the recorded order
  std::string cin, sin;
  for (const Chunk& c : chunks) {
    std::string& pending = c.client ? cin : sin;
    pending += c.bytes;
    for (;;) {
      size_t size = 0;
      Decode d;
      if (c.client) {
        ClientMsg m;
        d = t->onClient(pending, m);
        size = m.size;
      } else {
        ServerMsg m;
        d = t->onServer(pending, m);
        size = m.size;
      }
      if (d != Decode::Message) break;
      pending.erase(0, size);
    }
  }
  const auto m = membershipOf(*t);
  REQUIRE(m);
  CHECK(m->group == "g-rec");
  CHECK(m->member.rfind("0x", 0) == 0); // the embedded broker names members by address
  CHECK(m->generation == 2);
  CHECK(m->clientId == "c1");
  CHECK(m->leaveVersion == 1); // the embedded broker takes LeaveGroup up to v1
  CHECK(!membershipOf(*makeTracker()));
  CHECK(!membershipOf(*makeRespTracker()));
  // It asked to join (a rebalance evicts the member it replaces only then); a fresh one has not.
  CHECK(askedToJoin(*t));
  CHECK(!askedToJoin(*makeTracker()));
  CHECK(!askedToJoin(*makeRespTracker()));
}
