// The Kafka tracker on frames built field by field: flexible versions (no recorded client speaks them to
// the embedded broker), fetch positions and sessions, transactions, and what it refuses to guess.
#include "bodies.h"

#include "brokers/kafka/errors.h"
#include "brokers/kafka/tracker.h"

#include <catch2/catch.hpp>

using namespace idem::kafka;
using namespace idem::kafka::test;
using namespace idem::proxy;
using namespace idem::proxy::test;
using Strings = std::vector<std::string>;

namespace {

TrackerPtr plain() { return makeTracker(); }

/// The session of whole frames, decoded whole; every split of it must decode alike.
Events session(const std::vector<std::string>& client, const std::vector<std::string>& server) {
  const auto c = chunks(client, server);
  checkSplitInvariance(plain, c);
  return wholeOf(plain, c);
}

std::string wallets(int first, int count) {
  std::vector<TestRecord> rs;
  for (int i = 0; i < count; ++i) rs.push_back(walletRecord(first + i, "w" + std::to_string(first + i)));
  return batch(first - 1, count, recordsSection(rs));
}

} // namespace

TEST_CASE("kafka tracker: a flexible Fetch (v12) delivers its records with their JSON fields") {
  const Events e = session({request(api::kFetch, 12, 7, fetchRequest(12, {{"payments", 0, 0}, {"payments", 1, 5}}))},
                           {response(api::kFetch, 12, 7, fetchResponse(12, {{"payments", 0, 0, wallets(1, 2)},
                                                                             {"payments", 1, 0, ""}}))});
  requireBalanced(e);
  const auto st = steps(e);
  REQUIRE(st.size() == 1);
  CHECK(st[0].verb == "FETCH");
  CHECK(st[0].blocking);
  CHECK(st[0].detail == "Fetch v12 max wait 500 ms: payments-0@0 payments-1@5");
  const auto re = replies(e);
  CHECK(deliveredIds(re[0]) == Strings{"payments-0@0", "payments-0@1"});
  CHECK(re[0].delivered[1].fields == std::vector<std::pair<std::string, std::string>>{
                                         {"n", "2"}, {"event_id", "e-2"}, {"wallet", "w2"}, {"amount", "5000"}});
  CHECK(!re[0].empty_read);
  CHECK(re[0].summary == "2 records: payments-0@0 payments-0@1");
}

TEST_CASE("kafka tracker: Fetch v13 names topics by id, learnt from a Metadata answer on the connection") {
  const std::string id(16, '\x42');
  const std::string metadataReq = request(api::kMetadata, 12, 1, std::string("\x01\x00\x00", 3));
  const std::string metadataResp =
      response(api::kMetadata, 12, 1, metadataResponse(12, {{1, "127.0.0.1", 9092}}, "payments", id, 3));
  const std::string fetchReq = request(api::kFetch, 13, 2, fetchRequest(13, {{id, 2, 1}}, 0));
  const std::string fetchResp = response(api::kFetch, 13, 2, fetchResponse(13, {{id, 2, 0, wallets(1, 2)}}));
  SECTION("in the order a client sends them: the Metadata answer comes before the Fetch") {
    Feeder f(plain());
    f.client(metadataReq);
    f.server(metadataResp);
    f.client(fetchReq);
    f.server(fetchResp);
    const Events e = f.events();
    requireBalanced(e);
    CHECK(e.client[0].kind == ClientMsg::Kind::Pass); // Metadata: set-up, no step
    CHECK(e.server[0].kind == ServerMsg::Kind::Pass);
    const auto st = steps(e);
    CHECK(st[0].detail == "Fetch v13 max wait 0 ms: payments-2@1");
    CHECK(!st[0].blocking); // no max wait: the broker answers at once
    CHECK(deliveredIds(replies(e)[0]) == Strings{"payments-2@1"});
  }
  SECTION("a Fetch sent before the name is known shows the id; its records, read after, the name") {
    const Events e = session({metadataReq, fetchReq}, {metadataResp, fetchResp});
    requireBalanced(e);
    std::string hex;
    for (int i = 0; i < 16; ++i) hex += "42";
    CHECK(steps(e)[0].detail == "Fetch v13 max wait 0 ms: " + hex + "-2@1");
    CHECK(deliveredIds(replies(e)[0]) == Strings{"payments-2@1"}); // and from its position, 1
  }
}

TEST_CASE("kafka tracker: a Fetch answered with nothing new is an empty read") {
  const Events e = session({request(api::kFetch, 11, 3, fetchRequest(11, {{"payments", 0, 2}}))},
                           {response(api::kFetch, 11, 3, fetchResponse(11, {{"payments", 0, 0, ""}}))});
  const auto re = replies(e);
  CHECK(re[0].empty_read);
  CHECK(!re[0].error);
  CHECK(re[0].summary == "no records");
}

TEST_CASE("kafka tracker: for the embedded broker, a Fetch asking a longer max wait than the cap is forwarded "
          "asking the cap, and its step waits that long") {
  const Factory capped = [] {
    TrackerOptions o;
    o.fetchWaitCapMs = 500;
    return makeTracker(std::move(o));
  };
  for (int v : {4, 11, 12, 13, 15}) {
    INFO("Fetch v" << v);
    const std::string topic = v >= 13 ? std::string(16, 'i') : std::string("payments");
    const std::string asked = request(api::kFetch, v, 3, fetchRequest(v, {{topic, 0, 2}}, 5000));
    const std::string short_ = request(api::kFetch, v, 4, fetchRequest(v, {{topic, 0, 2}}, 100));
    const auto c = chunks({asked, short_}, {});
    checkSplitInvariance(capped, c);
    const Events e = wholeOf(capped, c);
    REQUIRE(e.client.size() == 2);
    // The same request with 500 in place of 5000, of the same length; what asks less goes as it is.
    CHECK(e.client[0].replacement == request(api::kFetch, v, 3, fetchRequest(v, {{topic, 0, 2}}, 500)));
    CHECK(e.client[0].step.waitMs == 500);
    CHECK(e.client[0].step.detail.find("max wait 500 ms (asked 5000)") != std::string::npos);
    CHECK(e.client[1].replacement.empty());
    CHECK(e.client[1].step.waitMs == 100);
    // Without the cap (a broker of the user's), nothing is rewritten.
    const Events plainly = wholeOf(plain, c);
    CHECK(plainly.client[0].replacement.empty());
    CHECK(plainly.client[0].step.waitMs == 5000);
  }
}

TEST_CASE("kafka tracker: records before the fetch position are not delivered (a batch starts earlier)") {
  const Events e = session({request(api::kFetch, 11, 3, fetchRequest(11, {{"payments", 0, 1}}))},
                           {response(api::kFetch, 11, 3, fetchResponse(11, {{"payments", 0, 0, wallets(1, 3)}}))});
  CHECK(deliveredIds(replies(e)[0]) == Strings{"payments-0@1", "payments-0@2"});
}

TEST_CASE("kafka tracker: an incremental fetch reads a partition it leaves out from the session's position") {
  const Events e = session(
      {request(api::kFetch, 12, 1, fetchRequest(12, {{"payments", 0, 1}, {"payments", 1, 0}})),
       request(api::kFetch, 12, 2, fetchRequest(12, {{"payments", 1, 1}})),
       request(api::kFetch, 12, 3, fetchRequest(12, {}, 500, {{"payments", 0, 0}}))},
      {response(api::kFetch, 12, 1, fetchResponse(12, {{"payments", 0, 0, ""}, {"payments", 1, 0, wallets(1, 1)}})),
       response(api::kFetch, 12, 2, fetchResponse(12, {{"payments", 0, 0, wallets(1, 3)}})),
       response(api::kFetch, 12, 3, fetchResponse(12, {{"payments", 0, 0, wallets(1, 3)}}))});
  const auto re = replies(e);
  CHECK(deliveredIds(re[0]) == Strings{"payments-1@0"});
  // Partition 0 is not in the second request: its position is still 1, from the first.
  CHECK(deliveredIds(re[1]) == Strings{"payments-0@1", "payments-0@2"});
  // Forgotten: no position kept, so everything the broker sends counts from 0.
  CHECK(steps(e)[2].detail == "Fetch v12 max wait 500 ms: -payments-0");
  CHECK(deliveredIds(re[2]) == Strings{"payments-0@0", "payments-0@1", "payments-0@2"});
}

TEST_CASE("kafka tracker: records of an aborted transaction and control markers are not delivered") {
  const std::string section = recordsSection({walletRecord(1, "w1"), walletRecord(2, "w1")});
  const TestRecord abortMarker{std::string("\x00\x00\x00\x00", 4), std::string("\x00\x00\x00\x00\x00\x00", 6), {}};
  const std::string records = batch(0, 2, section, 0x10, 7) + batch(2, 1, recordsSection({abortMarker}), 0x30, 7) +
                              batch(3, 1, recordsSection({walletRecord(4, "w2")}));
  FetchPart part{"payments", 0, 0, records};
  part.aborted = {{7, 0}};
  const Events e = session({request(api::kFetch, 11, 1, fetchRequest(11, {{"payments", 0, 0}}))},
                           {response(api::kFetch, 11, 1, fetchResponse(11, {part}))});
  CHECK(deliveredIds(replies(e)[0]) == Strings{"payments-0@3"});
}

TEST_CASE("kafka tracker: OffsetCommit (v8, flexible) acks its positions, a partition's error fails the reply") {
  const Events e = session(
      {request(api::kOffsetCommit, 8, 9, offsetCommitRequest(8, "payments", {{0, 2}, {1, 5}}))},
      {response(api::kOffsetCommit, 8, 9, offsetCommitResponse(8, "payments", {{0, 0}, {1, 27}}))});
  requireBalanced(e);
  const auto st = steps(e);
  CHECK(st[0].verb == "COMMIT_OFFSET");
  CHECK(st[0].acked == Strings{"payments-0@2", "payments-1@5"});
  CHECK(st[0].detail == "OffsetCommit v8 group g1 generation 3 member m-1: payments-0@2 payments-1@5");
  const auto re = replies(e);
  CHECK(re[0].error);
  CHECK(re[0].transient); // a group's error while its membership changes
  CHECK(re[0].summary == "payments-1: REBALANCE_IN_PROGRESS");
  // An error that says nothing of the group, beside it: the reply is no transient one.
  const Events denied = session(
      {request(api::kOffsetCommit, 8, 9, offsetCommitRequest(8, "payments", {{0, 2}, {1, 5}}))},
      {response(api::kOffsetCommit, 8, 9, offsetCommitResponse(8, "payments", {{0, 29}, {1, 27}}))});
  CHECK(replies(denied)[0].error);
  CHECK_FALSE(replies(denied)[0].transient);
}

TEST_CASE("kafka tracker: every decoded version of OffsetCommit and Fetch frames and decodes") {
  for (int v = 2; v <= 9; ++v) {
    INFO("OffsetCommit v" << v);
    const Events e = session({request(api::kOffsetCommit, v, 1, offsetCommitRequest(v, "t", {{0, 4}}))},
                             {response(api::kOffsetCommit, v, 1, offsetCommitResponse(v, "t", {{0, 0}}))});
    requireBalanced(e);
    CHECK(steps(e)[0].acked == Strings{"t-0@4"});
  }
  for (int v = 4; v <= 17; ++v) {
    INFO("Fetch v" << v);
    const std::string topic = v >= 13 ? std::string(16, '\x07') : "t";
    const Events e = session({request(api::kFetch, v, 1, fetchRequest(v, {{topic, 0, 0}}))},
                             {response(api::kFetch, v, 1, fetchResponse(v, {{topic, 0, 0, wallets(1, 1)}}))});
    requireBalanced(e);
    CHECK(replies(e)[0].delivered.size() == 1);
  }
}

TEST_CASE("kafka tracker: Produce with acks=0 gets no response, so it is no step") {
  Writer produce; // Produce v7: transactional id, acks, timeout, topics
  produce.string(std::nullopt, false);
  produce.int16(0);
  produce.int32(1000);
  produce.arrayCount(1, false);
  produce.string(std::string_view("payments"), false);
  produce.arrayCount(1, false);
  produce.int32(0);
  produce.bytes(std::string_view(wallets(1, 1)), false);
  const Events e = session({request(api::kProduce, 7, 1, produce.out),
                            request(api::kOffsetCommit, 7, 2, offsetCommitRequest(7, "t", {{0, 1}}))},
                           {response(api::kOffsetCommit, 7, 2, offsetCommitResponse(7, "t", {{0, 0}}))});
  requireBalanced(e);
  CHECK(e.client[0].kind == ClientMsg::Kind::Pass);
  CHECK(verbs(e) == Strings{"COMMIT_OFFSET"});
}

TEST_CASE("kafka tracker: responses must answer the oldest request, in order") {
  const std::string req = request(api::kFetch, 11, 5, fetchRequest(11, {{"t", 0, 0}}));
  const Events wrong = wholeOf(plain, chunks({req}, {response(api::kFetch, 11, 6, fetchResponse(11, {}))}));
  CHECK(wrong.server_invalid);
  const Events none = wholeOf(plain, chunks({}, {response(api::kFetch, 11, 5, fetchResponse(11, {}))}));
  CHECK(none.server_invalid);
}

TEST_CASE("kafka tracker: what it does not decode it does not guess") {
  SECTION("a version beyond the tables") {
    const Events e = wholeOf(plain, chunks({request(api::kFetch, 18, 1, fetchRequest(17, {}))}, {}));
    CHECK(e.client_invalid);
  }
  SECTION("ShareFetch delivers records the tracker does not read") {
    const Events e = wholeOf(plain, chunks({request(api::kShareFetch, 0, 1, "")}, {}));
    CHECK(e.client_invalid);
  }
  SECTION("a frame longer than the bound, or too short for a header") {
    Writer big;
    big.int32(static_cast<int32_t>(kMaxFrame + 1));
    CHECK(wholeOf(plain, chunks({big.out}, {})).client_invalid);
    CHECK(wholeOf(plain, chunks({framed("abc")}, {})).client_invalid);
  }
  SECTION("an lz4 batch in a Fetch answer") {
    const std::string lz4 = batch(0, 1, "not really lz4", 3);
    const Events e = wholeOf(plain, chunks({request(api::kFetch, 11, 1, fetchRequest(11, {{"t", 0, 0}}))},
                                           {response(api::kFetch, 11, 1, fetchResponse(11, {{"t", 0, 0, lz4}}))}));
    CHECK(!e.client_invalid);
    CHECK(e.server_invalid);
  }
  SECTION("a body that does not fit its layout") {
    const Events e = wholeOf(plain, chunks({request(api::kOffsetCommit, 7, 1, "\x00\x02g1")}, {}));
    CHECK(e.client_invalid);
  }
}

TEST_CASE("kafka tracker: an ApiVersions request newer than the tables passes, its answer uncapped") {
  const std::string answer("\x00\x00\x00\x00\x00\x01\x00\x01\x00\x00\x00\x2a\x00\x00\x00\x00\x00", 17);
  const Events e = session({request(api::kApiVersions, 5, 1, std::string("\x00\x00\x00", 3))},
                           {response(api::kApiVersions, 5, 1, answer)});
  requireBalanced(e);
  CHECK(e.client[0].kind == ClientMsg::Kind::Pass);
  CHECK(e.server[0].replacement.empty());
}

TEST_CASE("kafka tracker: API keys it does not decode pass, answered in order") {
  const Events e = session({request(60, 0, 1, std::string("\x00", 1)), request(200, 3, 2, "anything")},
                           {response(60, 0, 1, "whatever"), response(200, 3, 2, "")});
  requireBalanced(e);
  CHECK(e.client.size() == 2);
  CHECK(e.client[0].kind == ClientMsg::Kind::Pass);
  CHECK(e.server[1].kind == ServerMsg::Kind::Pass);
  CHECK(apiVerb(60) == "DESCRIBE_CLUSTER");
  CHECK(apiVerb(200) == "API_200");
}

TEST_CASE("kafka tracker: the group steps in flexible versions") {
  Writer join; // JoinGroup v9
  join.string(std::string_view("g1"), true);
  join.int32(45000);
  join.int32(300000);
  join.string(std::string_view(""), true);
  join.string(std::nullopt, true);
  join.string(std::string_view("consumer"), true);
  join.arrayCount(1, true);
  join.string(std::string_view("range"), true);
  join.bytes(std::string_view("meta"), true);
  join.noTags();
  join.string(std::nullopt, true); // Reason
  join.noTags();
  Writer joined;
  joined.int32(0);
  joined.int16(0);
  joined.int32(4);                                 // GenerationId
  joined.string(std::string_view("consumer"), true);
  joined.string(std::string_view("range"), true);
  joined.string(std::string_view("m-1"), true);    // Leader
  joined.int8(0);                                  // SkipAssignment
  joined.string(std::string_view("m-1"), true);    // MemberId
  joined.arrayCount(0, true);
  joined.noTags();
  Writer assignment; // ConsumerProtocolAssignment v1: payments [0, 2]
  assignment.int16(1);
  assignment.arrayCount(1, false);
  assignment.string(std::string_view("payments"), false);
  assignment.arrayCount(2, false);
  assignment.int32(0);
  assignment.int32(2);
  assignment.bytes(std::nullopt, false);
  Writer sync; // SyncGroup v5
  sync.string(std::string_view("g1"), true);
  sync.int32(4);
  sync.string(std::string_view("m-1"), true);
  sync.string(std::nullopt, true);
  sync.string(std::string_view("consumer"), true);
  sync.string(std::string_view("range"), true);
  sync.arrayCount(0, true);
  sync.noTags();
  Writer synced;
  synced.int32(0);
  synced.int16(0);
  synced.string(std::string_view("consumer"), true);
  synced.string(std::string_view("range"), true);
  synced.bytes(std::string_view(assignment.out), true);
  synced.noTags();
  Writer beat; // Heartbeat v4
  beat.string(std::string_view("g1"), true);
  beat.int32(4);
  beat.string(std::string_view("m-1"), true);
  beat.string(std::nullopt, true);
  beat.noTags();
  Writer rebalancing;
  rebalancing.int32(0);
  rebalancing.int16(27);
  rebalancing.noTags();
  Writer leave; // LeaveGroup v5
  leave.string(std::string_view("g1"), true);
  leave.arrayCount(1, true);
  leave.string(std::string_view("m-1"), true);
  leave.string(std::nullopt, true);
  leave.string(std::string_view("done"), true);
  leave.noTags();
  leave.noTags();
  Writer left;
  left.int32(0);
  left.int16(0);
  left.arrayCount(1, true);
  left.string(std::string_view("m-1"), true);
  left.string(std::nullopt, true);
  left.int16(0);
  left.noTags();
  left.noTags();
  const Events e = session({request(api::kJoinGroup, 9, 1, join.out), request(api::kSyncGroup, 5, 2, sync.out),
                            request(api::kHeartbeat, 4, 3, beat.out), request(api::kLeaveGroup, 5, 4, leave.out)},
                           {response(api::kJoinGroup, 9, 1, joined.out), response(api::kSyncGroup, 5, 2, synced.out),
                            response(api::kHeartbeat, 4, 3, rebalancing.out), response(api::kLeaveGroup, 5, 4, left.out)});
  requireBalanced(e);
  CHECK(verbs(e) == Strings{"JOIN_GROUP", "SYNC_GROUP", "HEARTBEAT", "LEAVE_GROUP"});
  const auto st = steps(e);
  CHECK(st[0].blocking);
  CHECK(st[1].blocking);
  CHECK(!st[2].blocking);
  CHECK(st[0].detail == "JoinGroup v9 group g1 member \"\" protocols: range");
  CHECK(st[3].detail == "LeaveGroup v5 group g1 member m-1");
  const auto re = replies(e);
  CHECK(re[0].summary == "generation 4, member m-1 (leader)");
  CHECK(re[1].summary == "assigned payments-0 payments-2");
  CHECK(re[2].error);
  CHECK(re[2].summary == "REBALANCE_IN_PROGRESS");
  CHECK(re[3].summary == "ok");
}

TEST_CASE("kafka tracker: a request the proxy answered itself expects no response from the broker") {
  TrackerPtr t = plain();
  ClientMsg m;
  const std::string first = request(api::kOffsetCommit, 7, 1, offsetCommitRequest(7, "t", {{0, 1}}));
  REQUIRE(t->onClient(first, m) == Decode::Message);
  t->withdrawLast();
  const std::string second = request(api::kOffsetCommit, 7, 2, offsetCommitRequest(7, "t", {{0, 2}}));
  REQUIRE(t->onClient(second, m) == Decode::Message);
  ServerMsg s;
  CHECK(t->onServer(response(api::kOffsetCommit, 7, 2, offsetCommitResponse(7, "t", {{0, 0}})), s) == Decode::Message);
  CHECK(s.kind == ServerMsg::Kind::ReplyEnd);
}

TEST_CASE("kafka errors: names and codes") {
  CHECK(errorName(27) == "REBALANCE_IN_PROGRESS");
  CHECK(errorName(-1) == "UNKNOWN_SERVER_ERROR");
  CHECK(errorName(999) == "ERROR_999");
  CHECK(errorCode("ILLEGAL_GENERATION") == std::optional<int16_t>(22));
  CHECK(errorCode("NOT_COORDINATOR") == std::optional<int16_t>(16));
  CHECK(!errorCode("NO_SUCH_ERROR"));
}
