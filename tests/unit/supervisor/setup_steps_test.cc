// Connection set-up on sessions recorded from real clients (tests/captures): the Controller, fed the steps
// and replies the proxy's trackers decode from them, numbers what a client sends as it connects apart from
// the target's own steps, never fires a fault there and never releases a hold there (history/trace.h
// setUpCommand); the same commands later on the connection stay steps.
#include "../proxy/replay.h"

#include "history/trace.h"
#include "supervisor/controller.h"

#include <catch2/catch.hpp>

using namespace idem;
using namespace idem::proxy::test;

namespace {

using Strings = std::vector<std::string>;

/// Feeds the steps of `capture` (one connection of c1, owner 1) to `ctl` as the proxy does: each request,
/// then the replies in order.
void feed(Controller& ctl, const std::string& capture, proxy::Server server) {
  const Events e = wholeOf(server == proxy::Server::Pg ? proxy::makePgTracker : proxy::makeRespTracker, loadCapture(capture));
  const auto requests = steps(e);
  const auto answers = replies(e);
  std::vector<proxy::StepToken> tokens;
  for (const auto& s : requests) {
    proxy::StepToken t;
    ctl.onRequest(1, server, 1, s, t);
    tokens.push_back(t);
  }
  for (size_t i = 0; i < answers.size() && i < tokens.size(); ++i) ctl.onReply(1, tokens[i], answers[i]);
}

/// "VERB#k" of each step recorded, with " set-up" when it is; in request order.
Strings recorded(const History& h) {
  auto all = recordsOf<ops::Step>(h.ops());
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.second->tReqUs < b.second->tReqUs; });
  Strings out;
  for (const auto& [op, s] : all) out.push_back(s->name() + (s->setUp ? " set-up" : ""));
  return out;
}

} // namespace

TEST_CASE("set-up on recorded sessions: ioredis's HELLO, CLIENT SETINFO and INFO ready check are numbered apart") {
  History h;
  Controller ctl(h, {Fault::parse("before:CLIENT#1"), Fault::parse("after:INFO#1"), Fault::parse("c1:before:HELLO#1")});
  ctl.addProcess(1, "c1");
  feed(ctl, "ioredis/session.cap", proxy::Server::Valkey);
  CHECK(recorded(h) == Strings{"HELLO#1 set-up", "CLIENT#1 set-up", "CLIENT#2 set-up", "INFO#1 set-up", "SET#1",
                               "XGROUP#1", "XADD#1", "XADD#2", "XREADGROUP#1", "XAUTOCLAIM#1", "XACK#1", "XREADGROUP#2",
                               "XADD#3", "SET#2", "GET#1", "MULTI#1", "INCRBY#1", "SET#3", "EXEC#1"});
  CHECK(ctl.pendingFaults().size() == 3); // no fault point: none fired
  CHECK(recordsOf<ops::FaultOp>(h.ops()).empty());
}

TEST_CASE("set-up on recorded sessions: RESP3's HELLO only, while CLIENT TRACKING and a PING after the work stay steps") {
  History h;
  Controller ctl(h, {});
  ctl.addProcess(1, "c1");
  feed(ctl, "resp3/session.cap", proxy::Server::Valkey);
  const Strings steps = recorded(h);
  REQUIRE(!steps.empty());
  CHECK(steps.front() == "HELLO#1 set-up");
  CHECK(std::count_if(steps.begin(), steps.end(), [](const std::string& s) { return s.find("set-up") != std::string::npos; }) == 1);
  CHECK(std::find(steps.begin(), steps.end(), "CLIENT#1") != steps.end());
  CHECK(std::find(steps.begin(), steps.end(), "PING#1") != steps.end());
}

TEST_CASE("set-up on recorded sessions: the drivers' own statements are never set-up") {
  for (const auto& [capture, server] : std::vector<std::pair<std::string, proxy::Server>>{
           {"node-pg/session.cap", proxy::Server::Pg}, {"psycopg/session.cap", proxy::Server::Pg},
           {"libpq/session.cap", proxy::Server::Pg}, {"asyncpg/session.cap", proxy::Server::Pg},
           {"pgx/session.cap", proxy::Server::Pg}, {"redis-py/session.cap", proxy::Server::Valkey},
           {"hiredis/session.cap", proxy::Server::Valkey}}) {
    INFO(capture);
    History h;
    Controller ctl(h, {});
    ctl.addProcess(1, "c1");
    feed(ctl, capture, server);
    const Strings steps = recorded(h);
    CHECK(steps.size() >= 5);
    for (const auto& s : steps) CHECK(s.find("set-up") == std::string::npos);
  }
}

TEST_CASE("set-up: a driver's SET before its first statement is apart, the same SET inside the work is a step") {
  History h;
  Controller ctl(h, {Fault::parse("drop:before:SET#1")});
  ctl.addProcess(1, "c1");
  int64_t n = 0;
  auto send = [&](int conn, const std::string& verb, const std::string& detail) {
    proxy::StepToken t;
    ctl.onRequest(1, proxy::Server::Pg, conn, proxy::StepInfo{verb, detail, {}, false}, t);
    proxy::ReplyInfo r;
    r.summary = verb + " " + std::to_string(++n);
    ctl.onReply(1, t, r);
  };
  send(1, "SET", "SET application_name = 'consumer'");
  send(1, "BEGIN", "BEGIN");
  send(1, "SET", "SET LOCAL lock_timeout = '1s'");
  send(2, "SHOW", "SHOW server_version"); // a second connection sets itself up too
  CHECK(recorded(h) == Strings{"SET#1 set-up", "BEGIN#1", "SET#1", "SHOW#1 set-up"});
  CHECK(ctl.pendingFaults().empty()); // SET#1 is the target's own SET LOCAL: the drop fired there
  CHECK(recordsOf<ops::FaultOp>(h.ops()).size() == 1);
}

TEST_CASE("set-up is no hold's release point: c2 held until c1's CLIENT#1 stays held through c1's set-up") {
  History h;
  Controller ctl(h, {Fault::parse("hold:c2:before:SELECT#1:c1:before:CLIENT#1"),
                     Fault::parse("hold:c2:before:INSERT#1:c1:after:XREADGROUP#1")});
  ctl.addProcess(1, "c1");
  ctl.addProcess(2, "c2");
  proxy::StepToken held, held2, t;
  CHECK(ctl.onRequest(2, proxy::Server::Pg, 1, proxy::StepInfo{"SELECT", "SELECT 1 FROM seen_events", {}, false}, held).kind ==
        proxy::Decision::Kind::Hold);
  CHECK(ctl.onRequest(2, proxy::Server::Pg, 1, proxy::StepInfo{"INSERT", "INSERT INTO seen_events", {}, false}, held2).kind ==
        proxy::Decision::Kind::Hold);
  ctl.onRequest(1, proxy::Server::Valkey, 1, proxy::StepInfo{"CLIENT", "client setname c1", {}, false}, t);
  ctl.onReply(1, t, proxy::ReplyInfo{});
  CHECK(ctl.activeHolds().size() == 2); // ioredis naming its connection orders nothing
  ctl.onRequest(1, proxy::Server::Valkey, 1, proxy::StepInfo{"XREADGROUP", "XREADGROUP GROUP g c1 STREAMS s 0", {}, false}, t);
  ctl.onReply(1, t, proxy::ReplyInfo{});
  REQUIRE(ctl.activeHolds().size() == 1); // c1's first read is its work: it releases the second hold
  CHECK(ctl.activeHolds().front().fault.verb == "SELECT");
}
