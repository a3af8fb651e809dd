// Broker addresses made the proxy's own, and ApiVersions capped at what the tracker decodes: the bytes a
// client gets in place of the broker's (ServerMsg::replacement), checked by decoding them again.
#include "bodies.h"

#include "brokers/kafka/rewrite.h"
#include "brokers/kafka/tracker.h"

#include <catch2/catch.hpp>

using namespace idem::kafka;
using namespace idem::kafka::test;
using namespace idem::proxy;
using namespace idem::proxy::test;

namespace {

/// Node n of any broker becomes proxy-n.test:1000+n (longer than the broker's host: sizes change).
std::optional<Address> proxyOf(int32_t node, const Address&) {
  return Address{"proxy-" + std::to_string(node) + ".test", 1000 + node};
}

/// The brokers a response body lists (rewriteResponse reports them as it reads them).
std::vector<Node> brokersOf(int16_t key, int16_t version, std::string_view body) {
  TopicNames names;
  const RewriteResult r = rewriteResponse(key, version, body, nullptr, false, names);
  REQUIRE(r.ok);
  return r.brokers;
}

/// Feeds request then response to a rewriting tracker; returns the response's replacement body (after the
/// header), or "" when there is none.
std::string replaced(int16_t key, int16_t version, const std::string& requestBody, const std::string& responseBody) {
  TrackerPtr t = makeTracker(TrackerOptions{proxyOf});
  ClientMsg c;
  REQUIRE(t->onClient(request(key, version, 1, requestBody), c) == Decode::Message);
  ServerMsg s;
  const std::string resp = response(key, version, 1, responseBody);
  REQUIRE(t->onServer(resp, s) == Decode::Message);
  CHECK(s.size == resp.size());
  if (s.replacement.empty()) return "";
  Reader r(s.replacement);
  CHECK(static_cast<size_t>(r.int32()) == s.replacement.size() - 4); // the length prefix fits the new size
  CHECK(r.int32() == 1);                                              // the correlation id is kept
  if (responseHeaderVersion(apiInfo(key), version) >= 1) CHECK(r.uvarint() == 0);
  return std::string(r.rest());
}

void checkProxied(const std::vector<Node>& nodes) {
  REQUIRE(!nodes.empty());
  for (const auto& n : nodes) {
    CHECK(n.host == "proxy-" + std::to_string(n.id) + ".test");
    CHECK(n.port == 1000 + n.id);
  }
}

} // namespace

TEST_CASE("kafka rewrite: Metadata's brokers become the proxy's listeners, in classic and flexible versions") {
  for (int v : {1, 2, 8, 9, 10, 12}) {
    INFO("Metadata v" << v);
    const std::string body = metadataResponse(v, {{1, "127.0.0.1", 9092}, {2, "10.0.0.2", 9093}}, "payments");
    const std::string out = replaced(api::kMetadata, v, "", body);
    REQUIRE(!out.empty());
    checkProxied(brokersOf(api::kMetadata, v, out));
    // Everything after the brokers is as the broker sent it: the same topic and partitions.
    CHECK(out.substr(out.find("payments")) == body.substr(body.find("payments")));
  }
}

TEST_CASE("kafka rewrite: FindCoordinator's coordinator, in versions 0 to 6") {
  for (int v = 0; v <= 6; ++v) {
    INFO("FindCoordinator v" << v);
    const std::string out = replaced(api::kFindCoordinator, v, "", findCoordinatorResponse(v, {3, "127.0.0.1", 9092}));
    checkProxied(brokersOf(api::kFindCoordinator, v, out));
  }
}

TEST_CASE("kafka rewrite: the NodeEndpoints a Fetch v16 answer tags on, its size adjusted, its records intact") {
  const std::string records = batch(0, 1, recordsSection({walletRecord(1, "w1")}));
  const std::string body = fetchResponse(16, {{std::string(16, '\x05'), 0, 0, records}}, {{2, "10.0.0.2", 9093}});
  TrackerPtr t = makeTracker(TrackerOptions{proxyOf});
  ClientMsg c;
  REQUIRE(t->onClient(request(api::kFetch, 16, 1, fetchRequest(16, {{std::string(16, '\x05'), 0, 0}})), c) ==
          Decode::Message);
  ServerMsg s;
  REQUIRE(t->onServer(response(api::kFetch, 16, 1, body), s) == Decode::Message);
  REQUIRE(s.kind == ServerMsg::Kind::ReplyEnd);
  CHECK(s.reply.delivered.size() == 1);
  REQUIRE(!s.replacement.empty());
  // The replacement is a Fetch answer a fresh tracker reads alike, now naming the proxy.
  TrackerPtr again = makeTracker();
  REQUIRE(again->onClient(request(api::kFetch, 16, 1, fetchRequest(16, {{std::string(16, '\x05'), 0, 0}})), c) ==
          Decode::Message);
  ServerMsg s2;
  REQUIRE(again->onServer(s.replacement, s2) == Decode::Message);
  CHECK(s2.reply.summary == s.reply.summary);
  checkProxied(brokersOf(api::kFetch, 16, std::string_view(s.replacement).substr(9)));
}

TEST_CASE("kafka rewrite: nothing to change, nothing replaced") {
  const std::string body = metadataResponse(2, {{1, "127.0.0.1", 9092}}, "payments");
  TopicNames names;
  SECTION("no address callback") {
    CHECK(!rewriteResponse(api::kMetadata, 2, body, nullptr, true, names).body);
  }
  SECTION("the callback gives the broker's own address") {
    const AddressFor same = [](int32_t, const Address& a) { return std::optional<Address>(a); };
    CHECK(!rewriteResponse(api::kMetadata, 2, body, same, true, names).body);
  }
  SECTION("the callback leaves the broker as it is") {
    const AddressFor none = [](int32_t, const Address&) { return std::optional<Address>(); };
    CHECK(!rewriteResponse(api::kMetadata, 2, body, none, true, names).body);
  }
}

TEST_CASE("kafka rewrite: ApiVersions is capped at the versions the tracker decodes") {
  const auto apiVersions = [](int v, std::vector<std::array<int16_t, 3>> keys, int16_t error = 0) {
    const bool flex = v >= 3;
    Writer w;
    w.int16(error);
    w.arrayCount(keys.size(), flex);
    for (const auto& k : keys) {
      w.int16(k[0]);
      w.int16(k[1]);
      w.int16(k[2]);
      if (flex) w.noTags();
    }
    if (v >= 1) w.int32(0);
    if (flex) w.noTags();
    return w.out;
  };
  const std::vector<std::array<int16_t, 3>> newer = {{api::kFetch, 0, 42}, {api::kMetadata, 0, 12}, {60, 0, 9}};
  for (int v : {2, 3, 4}) {
    INFO("ApiVersions v" << v);
    const std::string out = replaced(api::kApiVersions, v, "", apiVersions(v, newer));
    // Fetch capped at 17; Metadata already within; DescribeCluster (not decoded) left as it is.
    CHECK(out == apiVersions(v, {{api::kFetch, 0, 17}, {api::kMetadata, 0, 12}, {60, 0, 9}}));
    CHECK(replaced(api::kApiVersions, v, "", apiVersions(v, {{api::kFetch, 0, 11}})).empty());
  }
  // An UNSUPPORTED_VERSION answer, in the layout of librdkafka's mock broker (a flexible body with an
  // array count of 1 for one element), passes as it is.
  const std::string mock("\x00\x23\x01\x00\x12\x00\x00\x00\x02\x00\x00\x00\x00\x00", 14);
  CHECK(replaced(api::kApiVersions, 3, "", mock).empty());
}

TEST_CASE("kafka rewrite: every Metadata and FindCoordinator answer of the librdkafka capture") {
  size_t rewritten = 0;
  for (const char* f : {"librdkafka/session.cap", "librdkafka/session-3.cap", "librdkafka/session-5.cap"}) {
    const auto chunks = loadCapture(f);
    Feeder feed(makeTracker(TrackerOptions{proxyOf}));
    feed.client(joinDirection(chunks, true));
    feed.server(joinDirection(chunks, false));
    const Events e = feed.events();
    REQUIRE(!e.server_invalid);
    for (const auto& m : e.server) {
      if (m.replacement.empty()) continue;
      ++rewritten;
      CHECK(m.replacement.find("proxy-1.test") != std::string::npos);
      CHECK(m.replacement.find("127.0.0.1") == std::string::npos);
    }
  }
  CHECK(rewritten >= 5);
}

TEST_CASE("kafka rewrite: a late follower's SyncGroup refused as invalid is told to rejoin, on the embedded broker only") {
  for (int v : {0, 3}) {
    INFO("SyncGroup v" << v);
    Writer sync; // a follower's: no assignments
    sync.string(std::string_view("g1"), false);
    sync.int32(3);
    sync.string(std::string_view("m-2"), false);
    if (v >= 3) sync.string(std::nullopt, false); // GroupInstanceId
    sync.arrayCount(0, false);
    Writer refused;
    if (v >= 1) refused.int32(0);
    refused.int16(42); // INVALID_REQUEST: the mock's group is Stable already
    refused.bytes(std::string_view(""), false);
    for (bool embedded : {true, false}) {
      TrackerOptions o;
      o.lateSyncRejoins = embedded;
      TrackerPtr t = makeTracker(o);
      ClientMsg c;
      REQUIRE(t->onClient(request(api::kSyncGroup, v, 1, sync.out), c) == Decode::Message);
      ServerMsg s;
      REQUIRE(t->onServer(response(api::kSyncGroup, v, 1, refused.out), s) == Decode::Message);
      CHECK(s.reply.error);
      if (!embedded) {
        CHECK(s.replacement.empty());
        CHECK_THAT(s.reply.summary, Catch::Matchers::StartsWith("INVALID_REQUEST"));
        continue;
      }
      REQUIRE(!s.replacement.empty());
      CHECK_THAT(s.reply.summary, Catch::Matchers::StartsWith("REBALANCE_IN_PROGRESS"));
      Reader r(s.replacement);
      r.int32(); // size
      r.int32(); // correlation id
      if (v >= 1) CHECK(r.int32() == 0);
      CHECK(r.int16() == 27);
    }
  }
}

TEST_CASE("kafka rewrite: a late follower's SyncGroup refused as invalid gets its assignment from its leader's") {
  // ConsumerProtocol assignment: version 0, topic "payments" partition 2, no user data.
  Writer assignment;
  assignment.int16(0);
  assignment.arrayCount(1, false);
  assignment.string(std::string_view("payments"), false);
  assignment.arrayCount(1, false);
  assignment.int32(2);
  assignment.bytes(std::string_view(""), false);
  for (int v : {0, 1, 3, 4, 5}) {
    INFO("SyncGroup v" << v);
    const bool compact = v >= 4;
    auto syncOf = [&](const std::string& member, bool leader) {
      Writer w;
      w.string(std::string_view("g1"), compact);
      w.int32(3);
      w.string(std::string_view(member), compact);
      if (v >= 3) w.string(std::nullopt, compact); // GroupInstanceId
      if (v >= 5) {
        w.string(std::string_view("consumer"), compact);
        w.string(std::string_view("range"), compact);
      }
      w.arrayCount(leader ? 2 : 0, compact);
      if (leader)
        for (const std::string m : {"m-1", "m-2"}) {
          w.string(std::string_view(m), compact);
          w.bytes(m == "m-2" ? std::string_view(assignment.out) : std::string_view("x"), compact);
          if (compact) w.noTags();
        }
      if (compact) w.noTags();
      return w.out;
    };
    TrackerOptions o;
    o.lateSyncRejoins = true;
    o.syncAssignments = std::make_shared<SyncAssignments>();
    TrackerPtr leader = makeTracker(o), follower = makeTracker(o); // two connections of one broker
    ClientMsg c;
    REQUIRE(leader->onClient(request(api::kSyncGroup, v, 1, syncOf("m-1", true)), c) == Decode::Message);
    REQUIRE(follower->onClient(request(api::kSyncGroup, v, 7, syncOf("m-2", false)), c) == Decode::Message);
    Writer refused;
    if (v >= 1) refused.int32(0);
    refused.int16(42); // INVALID_REQUEST: the mock's group went Stable on the leader's SyncGroup
    if (v >= 5) {
      refused.string(std::nullopt, compact);
      refused.string(std::nullopt, compact);
    }
    refused.bytes(std::string_view(""), compact);
    if (compact) refused.noTags();
    ServerMsg s;
    REQUIRE(follower->onServer(response(api::kSyncGroup, v, 7, refused.out), s) == Decode::Message);
    REQUIRE(!s.replacement.empty());
    CHECK(!s.reply.error);
    CHECK_THAT(s.reply.summary, Catch::Matchers::Contains("payments"));
    Reader r(s.replacement);
    r.int32(); // size
    CHECK(r.int32() == 7); // correlation id
    if (compact) r.skipTags();
    if (v >= 1) CHECK(r.int32() == 0);
    CHECK(r.int16() == 0);
    if (v >= 5) {
      CHECK(r.string(compact) == std::optional<std::string_view>("consumer"));
      CHECK(r.string(compact) == std::optional<std::string_view>("range"));
    }
    CHECK(r.bytes(compact) == std::optional<std::string_view>(assignment.out));
    if (compact) r.skipTags();
    CHECK(!r.failed());
    CHECK(r.left() == 0);
    // Another generation's follower has no assignment here: told to rejoin.
    TrackerPtr stale = makeTracker(o);
    Writer old;
    old.string(std::string_view("g1"), compact);
    old.int32(2);
    old.string(std::string_view("m-2"), compact);
    if (v >= 3) old.string(std::nullopt, compact);
    if (v >= 5) {
      old.string(std::nullopt, compact);
      old.string(std::nullopt, compact);
    }
    old.arrayCount(0, compact);
    if (compact) old.noTags();
    REQUIRE(stale->onClient(request(api::kSyncGroup, v, 9, old.out), c) == Decode::Message);
    ServerMsg s2;
    REQUIRE(stale->onServer(response(api::kSyncGroup, v, 9, refused.out), s2) == Decode::Message);
    CHECK_THAT(s2.reply.summary, Catch::Matchers::StartsWith("REBALANCE_IN_PROGRESS"));
  }
}
