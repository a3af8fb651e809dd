// The harness's NATS client against real nats-server processes: the embedded server's start, token, restart
// and stop; NatsBroker's stream and durable of a run, its publish, progress, leftover and forget beside a
// libnats pull consumer of the durable.
#include "brokers/nats/client/embedded.h"
#include "brokers/nats/client/nats_broker.h"
#include "core/error.h"

#include <catch2/catch.hpp>
#include <nats/nats.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <cerrno>

using idem::brokers::Message;
using idem::nats::client::EmbeddedNats;
using idem::nats::client::NatsBroker;
using Strings = std::vector<std::string>;

namespace client_test {

/// A pull consumer of the durable the broker's env names, as the reference targets bind one.
struct Puller {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  natsSubscription* sub = nullptr;

  explicit Puller(const std::map<std::string, std::string>& env) {
    REQUIRE(natsConnection_ConnectTo(&nc, env.at("NATS_URL").c_str()) == NATS_OK);
    REQUIRE(natsConnection_JetStream(&js, nc, nullptr) == NATS_OK);
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = env.at("STREAM").c_str();
    so.Consumer = env.at("DURABLE").c_str();
    jsErrCode jerr = static_cast<jsErrCode>(0);
    REQUIRE(js_PullSubscribe(&sub, js, env.at("SUBJECT").c_str(), env.at("DURABLE").c_str(), nullptr, &so, &jerr) ==
            NATS_OK);
  }
  ~Puller() {
    natsSubscription_Destroy(sub);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
  }
  /// The next message (its stream sequence, its payload, its event_id header); acknowledged when `ack`.
  std::tuple<uint64_t, std::string, std::string> next(bool ack) {
    natsMsgList list{nullptr, 0};
    jsErrCode jerr = static_cast<jsErrCode>(0);
    REQUIRE(natsSubscription_Fetch(&list, sub, 1, 2000, &jerr) == NATS_OK);
    REQUIRE(list.Count == 1);
    natsMsg* m = list.Msgs[0];
    jsMsgMetaData* meta = nullptr;
    REQUIRE(natsMsg_GetMetaData(&meta, m) == NATS_OK);
    const uint64_t seq = meta->Sequence.Stream;
    jsMsgMetaData_Destroy(meta);
    const char* eventId = nullptr;
    natsMsgHeader_Get(m, "event_id", &eventId);
    std::tuple<uint64_t, std::string, std::string> out{seq, std::string(natsMsg_GetData(m), natsMsg_GetDataLength(m)),
                                                       eventId ? eventId : ""};
    if (ack) REQUIRE(natsMsg_AckSync(m, nullptr, &jerr) == NATS_OK);
    natsMsgList_Destroy(&list);
    return out;
  }
};

std::map<std::string, std::string> envOf(const NatsBroker& b) {
  auto env = b.connectionEnv(b.upstream().port); // straight to the server: no proxy in this test
  for (const auto& [k, v] : b.consumerEnv()) env[k] = v;
  return env;
}

/// The durable's AckWait and BackOff as the server keeps them, in ms.
std::pair<int64_t, std::vector<int64_t>> durableTimes(const std::map<std::string, std::string>& env) {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  jsConsumerInfo* ci = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  REQUIRE(natsConnection_ConnectTo(&nc, env.at("NATS_URL").c_str()) == NATS_OK);
  REQUIRE(natsConnection_JetStream(&js, nc, nullptr) == NATS_OK);
  REQUIRE(js_GetConsumerInfo(&ci, js, env.at("STREAM").c_str(), env.at("DURABLE").c_str(), nullptr, &jerr) == NATS_OK);
  std::pair<int64_t, std::vector<int64_t>> out{ci->Config->AckWait / 1000000, {}};
  for (int i = 0; i < ci->Config->BackOffLen; ++i) out.second.push_back(ci->Config->BackOff[i] / 1000000);
  jsConsumerInfo_Destroy(ci);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  return out;
}

} // namespace client_test

using namespace client_test;

TEST_CASE("nats client: a run's stream and durable with publish and progress and leftover and forget") {
  NatsBroker b(30000); // no redelivery within the test
  b.reset();
  CHECK(b.stream() == "events_1");
  CHECK(b.group() == "consumers_1");
  const auto env = envOf(b);
  CHECK(env.at("SUBJECT") == "events.1");
  CHECK(env.at("NATS_URL").rfind("nats://" + env.at("NATS_TOKEN") + "@127.0.0.1:", 0) == 0);
  std::vector<Message> msgs;
  for (int i = 1; i <= 3; ++i)
    msgs.push_back({"w1", "e-" + std::to_string(i), {{"n", std::to_string(i)}, {"wallet", "w1"}}});
  CHECK(b.publish(msgs) == Strings{"1", "2", "3"});
  auto p = b.progress();
  CHECK(p.pending == 3);
  CHECK(!p.delivered);
  {
    Puller c(env);
    auto [seq, payload, eventId] = c.next(true);
    CHECK(seq == 1);
    CHECK(nlohmann::json::parse(payload) == nlohmann::json{{"n", "1"}, {"wallet", "w1"}});
    CHECK(eventId == "e-1");
    CHECK(std::get<0>(c.next(false)) == 2); // delivered, not acknowledged
  }
  p = b.progress();
  CHECK(p.pending == 2); // 3 to deliver, 2 awaiting its ack
  CHECK(!p.delivered);
  CHECK(p.position == "ack floor 1, delivered 2");
  auto l = b.leftover();
  CHECK(l.stream == Strings{"1", "2", "3"});
  CHECK(l.undelivered == Strings{"3"});
  REQUIRE(l.pending.size() == 1);
  CHECK(l.pending[0].entry == "2");
  // forget: the durable from the start again, the acknowledged message 1 included.
  b.forget();
  p = b.progress();
  CHECK(p.pending == 3);
  CHECK(!p.delivered);
  {
    Puller c(env);
    for (uint64_t want = 1; want <= 3; ++want) CHECK(std::get<0>(c.next(true)) == want);
  }
  p = b.progress();
  CHECK(p.pending == 0);
  CHECK(p.delivered);
  // A new run: a new stream and durable, nothing of the last one.
  b.reset();
  CHECK(b.stream() == "events_2");
  CHECK(b.progress().pending == 0);
  CHECK(b.leftover().stream.empty());
}

TEST_CASE("nats client: a restart keeps the stream and the durable's ack floor on the same port") {
  NatsBroker b(30000);
  b.reset();
  b.publish({{"w1", "e-1", {{"n", "1"}}}, {"w1", "e-2", {{"n", "2"}}}});
  const int port = b.upstream().port;
  {
    Puller c(envOf(b));
    c.next(true);
  }
  REQUIRE(b.restart());
  CHECK(b.upstream().port == port);
  auto p = b.progress();
  CHECK(p.pending == 1);
  CHECK(p.position == "ack floor 1, delivered 1");
  Puller c(envOf(b));
  CHECK(std::get<0>(c.next(true)) == 2);
}

TEST_CASE("nats client: the embedded server refuses a client without its token and is gone once stopped") {
  pid_t pid = 0;
  {
    EmbeddedNats s;
    pid = s.pid();
    REQUIRE(pid > 0);
    natsConnection* nc = nullptr;
    const std::string noToken = "nats://127.0.0.1:" + std::to_string(s.port());
    CHECK(natsConnection_ConnectTo(&nc, noToken.c_str()) != NATS_OK);
    REQUIRE(natsConnection_ConnectTo(&nc, s.url().c_str()) == NATS_OK);
    natsConnection_Destroy(nc);
  }
  CHECK(::kill(pid, 0) == -1); // killed and reaped
  CHECK(errno == ESRCH);
}

TEST_CASE("nats url: a token or a user, the host and port, and one-line errors naming --nats-url") {
  using idem::nats::client::parseNatsUrl;
  auto token = parseNatsUrl("nats://s3cret@nats.internal:4223");
  CHECK(token.host == "nats.internal");
  CHECK(token.port == 4223);
  CHECK(token.token == "s3cret");
  CHECK(token.url("127.0.0.1", 9) == "nats://s3cret@127.0.0.1:9");
  auto user = parseNatsUrl("nats://app:p%40ss@h");
  CHECK(user.port == 4222);
  CHECK(user.user == "app");
  CHECK(user.password == "p@ss");
  CHECK(user.url("127.0.0.1", 9) == "nats://app:p%40ss@127.0.0.1:9");
  CHECK(parseNatsUrl("nats://h:4222/").credentials().empty());
  for (const auto& [url, says] : std::vector<std::pair<std::string, std::string>>{
           {"tls://h:4222", "TLS"},
           {"http://h", "scheme must be nats://"},
           {"nats://a:4222,nats://b:4222", "one server"},
           {"nats://h/x", "no path"},
           {"nats://h:99999", "port must be 1..65535"}}) {
    INFO(url);
    try {
      parseNatsUrl(url);
      FAIL("accepted");
    } catch (const idem::UsageError& e) {
      const std::string what = e.what();
      CHECK(what.rfind("--nats-url: ", 0) == 0);
      CHECK(what.find(says) != std::string::npos);
    }
  }
}

TEST_CASE("nats client: the durable redelivers after AckWait, then after its BackOff's longer times, also once forgotten") {
  NatsBroker b(20);
  b.reset();
  const auto env = envOf(b);
  // AckWait, then 250 ms and 1 s between later deliveries of a message.
  CHECK(durableTimes(env) == std::make_pair(int64_t(20), std::vector<int64_t>{20, 250, 1000}));
  CHECK(b.publish({{"w1", "e-1", {{"n", "1"}}}}) == Strings{"1"});
  {
    Puller c(env);
    CHECK(std::get<0>(c.next(false)) == 1);
    CHECK(std::get<0>(c.next(false)) == 1); // again after AckWait
    CHECK(std::get<0>(c.next(true)) == 1);  // and again, 250 ms later
  }
  CHECK(b.progress().pending == 0);
  b.forget();
  CHECK(durableTimes(env) == std::make_pair(int64_t(20), std::vector<int64_t>{20, 250, 1000}));
  // From 1 s on, AckWait alone.
  NatsBroker slow(1000);
  slow.reset();
  CHECK(durableTimes(envOf(slow)) == std::make_pair(int64_t(1000), std::vector<int64_t>{}));
}
