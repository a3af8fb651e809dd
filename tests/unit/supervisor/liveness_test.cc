// The liveness rule (supervisor/liveness.h) on written step sequences: each sequence is fed to a real
// Controller as the proxies would report it (requests and replies, no sockets), and what the Controller
// keeps of the process is judged idle or busy.
#include "controller_feed.h"
#include "fakes.h"

#include <catch2/catch.hpp>

using namespace idem;
using namespace idem::test;
using liveness::Decision;

TEST_CASE("liveness: entries claimed and not acknowledged keep a consumer busy after an empty blocking read") {
  // The one-shot consumer after a kill: XAUTOCLAIM hands it four entries, its XREADGROUP BLOCK returns
  // nothing, and it starts 3.5 s of work on the first entry: busy, though its latest step is an empty read.
  Steps s;
  s.read(1, "XAUTOCLAIM", {"1-3", "1-4", "1-5", "1-6"});
  CHECK_FALSE(s.idle(1));
  s.read(1, "XREADGROUP", {}, true);
  CHECK(s.ctl.state(1).lastWasEmptyRead);
  CHECK_FALSE(s.idle(1));
  CHECK(liveness::busyWhy(s.view(1)) == "holding 4 entries");
  for (const char* id : {"1-3", "1-4", "1-5"}) {
    s.step(1, "BEGIN");
    s.step(1, "COMMIT");
    s.ack(1, id);
    CHECK_FALSE(s.idle(1));
  }
  s.step(1, "COMMIT");
  s.ack(1, "1-6");
  CHECK_FALSE(s.idle(1)); // between two steps of its work: it has not come back to reading yet
  s.read(1, "XAUTOCLAIM", {});
  CHECK(s.idle(1)); // nothing held, a poller between polls
}

TEST_CASE("liveness: whichever read delivered them, held entries make a consumer busy, also with a blocking read in flight") {
  for (const char* verb : {"XREADGROUP", "XAUTOCLAIM", "XCLAIM"}) {
    Steps s;
    s.read(1, verb, {"1-1"});
    s.send(1, "XREADGROUP", true); // blocked reading for more while it holds 1-1 (a concurrent consumer)
    INFO(verb);
    CHECK_FALSE(s.idle(1));
  }
  Steps own; // its own pending list, XREADGROUP ... 0, after a same-name restart
  own.read(1, "XREADGROUP", {"1-1", "1-2"});
  own.ack(1, "1-1");
  own.read(1, "XREADGROUP", {}, true);
  CHECK_FALSE(own.idle(1));
  own.ack(1, "1-2");
  own.send(1, "XREADGROUP", true);
  CHECK(own.idle(1)); // nothing held, only a blocking read in flight
}

TEST_CASE("liveness: an entry acknowledged by another process is no one's work any more") {
  Steps s;
  s.read(1, "XREADGROUP", {"1-1"});
  s.read(2, "XAUTOCLAIM", {"1-1"});
  s.read(1, "XREADGROUP", {}, true);
  s.read(2, "XREADGROUP", {}, true);
  CHECK_FALSE(s.idle(1));
  CHECK_FALSE(s.idle(2));
  s.ack(2, "1-1");
  CHECK(s.idle(1));
  CHECK_FALSE(s.idle(2)); // its latest step is the XACK: between two steps
}

TEST_CASE("liveness: a request in flight that is not a blocking read is busy, a blocking read alone is idle") {
  Steps s;
  CHECK_FALSE(s.idle(1)); // no request yet: starting
  CHECK(liveness::busyWhy(s.view(1)) == "starting (no request yet)");
  auto t = s.send(1, "XREADGROUP", true);
  CHECK(s.idle(1));
  auto q = s.send(1, "UPDATE");
  CHECK_FALSE(s.idle(1));
  CHECK(liveness::busyWhy(s.view(1)) == "waiting for a reply");
  s.reply(1, q);
  CHECK(s.idle(1)); // every request in flight is a blocking read
  s.reply(1, t, {}, true);
  CHECK(s.idle(1));
}

TEST_CASE("liveness: a connection cut under a consumer that holds nothing leaves it idle until it makes a request") {
  Steps s;
  auto t = s.send(1, "XREADGROUP", true);
  s.ctl.onCut(1, t, proxy::CutKind::Forwarded); // a server restart closed the connection
  CHECK(s.ctl.state(1).cutAt == "XREADGROUP#1 (valkey)");
  CHECK(s.idle(1)); // it reconnects on its own timer, as a poller polls
  s.send(1, "XAUTOCLAIM");
  CHECK(s.ctl.state(1).cutAt.empty());
  CHECK_FALSE(s.idle(1));

  Steps holding; // holding entries, the cut does not make it idle: it may be calling out
  holding.read(1, "XREADGROUP", {"1-1"});
  auto a = holding.send(1, "XREADGROUP", true);
  holding.ctl.onCut(1, a, proxy::CutKind::Withheld);
  CHECK_FALSE(holding.idle(1));
}

TEST_CASE("liveness: a client that replays its session's set-up after a cut is still reconnecting, not working") {
  Steps s;
  auto consume = s.send(1, "XREADGROUP", true);
  s.ctl.onCut(1, consume, proxy::CutKind::Forwarded); // the broker restarted under it
  REQUIRE(s.idle(1));
  // The RabbitMQ Java client's recovery: a new connection, its prefetch set again, and no consumer.
  proxy::StepInfo qos;
  qos.verb = "QOS";
  qos.configures = true;
  proxy::StepToken t;
  s.ctl.onRequest(1, proxy::Server::Broker, 2, qos, t);
  CHECK_FALSE(s.idle(1)); // waiting for its reply
  s.ctl.onReply(1, t, {});
  CHECK(s.ctl.state(1).cutAt == "XREADGROUP#1 (valkey)");
  CHECK(s.idle(1)); // a stall once the stall time passes with its entries left
  s.step(1, "UPDATE"); // work: busy again
  CHECK(s.ctl.state(1).cutAt.empty());
  CHECK_FALSE(s.idle(1));
}

TEST_CASE("liveness: a request whose connection goes unobserved is no cut: the process stays busy until its next request") {
  Steps s;
  auto q = s.send(1, "SELECT"); // its result outgrows what the proxy holds for one step: the bytes flow on, unseen
  s.ctl.onCut(1, q, proxy::CutKind::Unobserved);
  CHECK(s.ctl.state(1).cutAt.empty());
  CHECK_FALSE(s.idle(1));
  CHECK(liveness::busyWhy(s.view(1)) == "between two steps of its work");
  s.read(1, "XREADGROUP", {}, true);
  CHECK(s.idle(1));
}

TEST_CASE("liveness: an entry handed again three times to the consumer holding it is spinning") {
  Steps s;
  s.read(1, "XAUTOCLAIM", {"1-2"});
  for (int i = 0; i < 3; ++i) {
    CHECK(s.view(1).spinning.empty());
    s.step(1, "BEGIN");
    s.step(1, "COMMIT"); // a duplicate it skips, never acknowledging it
    s.read(1, "XAUTOCLAIM", {"1-2"});
  }
  CHECK(s.view(1).spinning == std::set<std::string>{"1-2"});
  CHECK_FALSE(s.idle(1));
}

TEST_CASE("controller: a step a delay fault withholds is the harness's doing until it goes on") {
  Steps s({Fault::parse("delay:before:BEGIN#1:60000", "test")});
  CHECK_FALSE(s.ctl.delaying());
  auto begin = s.send(1, "BEGIN");
  CHECK(s.ctl.delaying()); // its request withheld for a minute
  s.reply(1, begin);
  CHECK_FALSE(s.ctl.delaying()); // the step ended (the proxy let it through)
}

TEST_CASE("liveness: a Valkey client that says only AUTH or HELLO after a cut is still reconnecting, not working") {
  Steps s;
  auto read = s.send(1, "XREADGROUP", true);
  s.ctl.onCut(1, read, proxy::CutKind::Withheld); // a drop before its read
  REQUIRE(s.idle(1));
  // node-redis's own reconnect: the handshake, its library's name, and then nothing.
  for (const char* line : {"HELLO 3 AUTH default ***", "CLIENT SETINFO LIB-NAME node-redis",
                           "CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type external-ip"}) {
    proxy::StepInfo hello;
    hello.detail = line;
    hello.verb = hello.detail.substr(0, hello.detail.find(' '));
    proxy::StepToken t;
    s.ctl.onRequest(1, proxy::Server::Valkey, 2, hello, t);
    s.ctl.onReply(1, t, {});
  }
  CHECK(s.ctl.state(1).cutAt == "XREADGROUP#1 (valkey)");
  CHECK(s.idle(1));
  s.read(1, "XREADGROUP", {}, true); // it reads again: back at work
  CHECK(s.ctl.state(1).cutAt.empty());
}

TEST_CASE("liveness: a copy of an entry handed out after its acknowledgement reached the broker is no one's work") {
  // A JetStream pull answered with a message the server redelivered before it read the ack that settles it.
  Steps s;
  s.read(1, "XREADGROUP", {"1-1"});
  s.ack(1, "1-1");
  s.read(1, "XREADGROUP", {"1-1"}, true);
  CHECK(s.view(1).held == 0);
  s.read(1, "XREADGROUP", {}, true); // it skips the copy (its dedup, or an error) and pulls again
  CHECK(s.idle(1));
  s.read(2, "XAUTOCLAIM", {"1-1"}); // to another process alike
  CHECK(s.view(2).held == 0);

  // A forget after the acknowledgement takes it back: what the broker hands out again is work.
  Steps f({Fault::parse("forget:after:XACK#1", "test")});
  f.read(1, "XREADGROUP", {"1-1"});
  auto ack = f.send(1, "XACK", false, {"1-1"});
  proxy::ReplyInfo one;
  one.summary = ":1";
  REQUIRE(f.ctl.onReply(1, ack, one).kind == proxy::Decision::Kind::Hold); // until the broker went back
  auto due = f.ctl.takeServerActions();
  REQUIRE(due.size() == 1);
  f.ctl.serverActionDone(due[0]);
  f.ctl.onReleased(1, ack);
  f.read(1, "XREADGROUP", {"1-1"}, true);
  CHECK(f.view(1).held == 1);
  f.read(1, "XREADGROUP", {}, true);
  CHECK_FALSE(f.idle(1));
}

TEST_CASE("liveness: an entry the consumer handed back (a nack with requeue) is no work of its own") {
  Steps s;
  auto deliver = s.send(1, "XREADGROUP", true);
  s.reply(1, deliver, {"1-1"}, true);
  REQUIRE_FALSE(s.idle(1));
  proxy::StepInfo nack;
  nack.verb = "NACK";
  nack.returned = {"1-1"};
  proxy::StepToken t;
  s.ctl.onRequest(1, proxy::Server::Broker, 1, nack, t);
  s.ctl.onReply(1, t, {});
  CHECK(s.view(1).held == 0);
  s.read(1, "XREADGROUP", {}, true);
  CHECK(s.idle(1));
  s.read(1, "XREADGROUP", {"1-1"}, true); // handed to it again: its own again
  CHECK(s.view(1).held == 1);
  CHECK_FALSE(s.idle(1));
}

TEST_CASE("liveness: entries an error answer hands back (a closed channel) are no work of its own, and the step says so") {
  Steps s;
  s.read(1, "XREADGROUP", {"1-1", "1-2"}, true);
  REQUIRE(s.view(1).held == 2);
  proxy::StepInfo qos;
  qos.verb = "QOS";
  proxy::StepToken t;
  s.ctl.onRequest(1, proxy::Server::Broker, 1, qos, t);
  proxy::ReplyInfo closed;
  closed.error = true;
  closed.returned = {"1-2"};
  s.ctl.onReply(1, t, closed);
  CHECK(s.view(1).held == 1);
  const auto ops = s.history.ops(); // a copy: the step below points into it
  const auto* step = ops.back().as<ops::Step>();
  REQUIRE(step);
  CHECK(step->error);
  CHECK(step->returned == std::vector<std::string>{"1-2"});
}

TEST_CASE("liveness: a blocking read whose reply a fault held is counted out once, so the next blocking read is idle") {
  // delay:after:XREADGROUP#1 holds the reply of a blocking read; once it reaches the process, the process's
  // next blocking read in flight is idle again (it used to count as a request waiting for its reply, and a
  // settled run then never ended).
  Steps s({Fault::parse("delay:after:XREADGROUP#1:50")});
  auto t = s.send(1, "XREADGROUP", true);
  proxy::ReplyInfo empty;
  empty.empty_read = true;
  CHECK(s.ctl.onReply(1, t, empty).kind == proxy::Decision::Kind::Hold);
  CHECK(s.idle(1)); // still a blocking read in flight
  s.ctl.onReleased(1, t);
  CHECK(s.ctl.state(1).inflight == 0);
  CHECK(s.ctl.state(1).inflightBlocking == 0);
  s.send(1, "XREADGROUP", true);
  CHECK(s.idle(1));
}

TEST_CASE("liveness: a consumer the broker pushes entries to is idle whenever it holds none") {
  // An AMQP consumer: its CONSUME's reply says it waits for pushes; each DELIVER (a push: request and reply
  // at once) hands it an entry; its ACK is a request the server never answers (ended with no reply).
  Steps s;
  proxy::ReplyInfo waiting;
  waiting.waiting = true;
  auto consume = s.send(1, "CONSUME");
  s.ctl.onReply(1, consume, waiting);
  CHECK(s.idle(1)); // subscribed, nothing delivered yet
  proxy::StepInfo deliver;
  deliver.verb = "DELIVER";
  deliver.read = true;
  proxy::StepToken d;
  s.ctl.onRequest(1, proxy::Server::Broker, 1, deliver, d);
  proxy::ReplyInfo one = waiting;
  one.delivered.push_back({"events.1-1", {{"n", "1"}}});
  s.ctl.onReply(1, d, one);
  CHECK_FALSE(s.idle(1)); // holds events.1-1
  s.step(1, "BEGIN");
  s.step(1, "COMMIT");
  CHECK_FALSE(s.idle(1));
  auto ack = s.send(1, "ACK", false, {"events.1-1"});
  s.ctl.onReply(1, ack, waiting);
  CHECK(s.idle(1));
  // Work after the ack (an ack-first consumer's transaction) leaves it waiting all the same.
  s.step(1, "COMMIT");
  CHECK(s.idle(1));
}

TEST_CASE("liveness: a consumer whose deliveries settle themselves (no-ack) is working while it was recently active") {
  // RabbitMQ's no-ack: each DELIVER acknowledges its own message. Nothing is held, and no acknowledgement
  // will tell when the consumer is done with what is in its memory: views() (execute.cc) counts it working
  // for the stall time after its latest request or delivery.
  Steps s;
  proxy::ReplyInfo waiting;
  waiting.waiting = true;
  s.ctl.onReply(1, s.send(1, "CONSUME"), waiting);
  CHECK_FALSE(s.ctl.state(1).settledOnDelivery);
  proxy::StepInfo deliver;
  deliver.verb = "DELIVER";
  deliver.read = true;
  deliver.acked = {"events.1-1"};
  proxy::StepToken d;
  s.ctl.onRequest(1, proxy::Server::Broker, 1, deliver, d);
  proxy::ReplyInfo one = waiting;
  one.delivered.push_back({"events.1-1", {{"n", "1"}}});
  s.ctl.onReply(1, d, one);
  CHECK(s.ctl.state(1).settledOnDelivery);
  auto v = s.view(1);
  CHECK(v.held == 0);
  CHECK(liveness::idle(v)); // by what the Controller keeps alone: subscribed, holding nothing
  v.workingUnacknowledged = true;
  CHECK_FALSE(liveness::idle(v));
  CHECK(liveness::busyWhy(v) == "working on entries its broker settled as it delivered them");
}

TEST_CASE("controller: a no-ack delivery a fault keeps from its process is still the broker's delivery, settled") {
  // The broker settled the message as it sent it: the history keeps what the push delivered, so the
  // message counts as acknowledged (lost if unapplied), not as one never delivered that waits (stuck).
  History h;
  Controller ctl(h, {Fault::parse("drop:before:DELIVER#1"), Fault::parse("drop:before:EXEC#1")});
  ctl.addProcess(1, "c1");
  proxy::StepInfo deliver;
  deliver.verb = "DELIVER";
  deliver.read = true;
  deliver.acked = {"events.1-1"};
  deliver.pushed = true; // the hub's mark of a push
  proxy::StepToken t;
  CHECK(ctl.onRequest(1, proxy::Server::Broker, 1, deliver, t).kind == proxy::Decision::Kind::Drop);
  const auto step = stepOf(h, "DELIVER", 1);
  CHECK(step["outcome"] == "dropped-before");
  REQUIRE(step["delivered"].size() == 1);
  CHECK(step["delivered"][0]["entry"] == "events.1-1");
  // A request that reads and acknowledges (EXEC of MULTI, XACK, XREADGROUP) delivered nothing it never sent.
  proxy::StepInfo exec;
  exec.verb = "EXEC";
  exec.read = true;
  exec.acked = {"1-1"};
  CHECK(ctl.onRequest(1, proxy::Server::Valkey, 2, exec, t).kind == proxy::Decision::Kind::Drop);
  CHECK_FALSE(stepOf(h, "EXEC", 1).contains("delivered"));
}

TEST_CASE("liveness: an entry a transaction acknowledged and then read again is held, not settled on delivery") {
  // EXEC of MULTI, XACK 1-1, XREADGROUP after a forget set the group back: 1-1 is pending again, c1's work.
  Steps s;
  auto exec = s.send(1, "EXEC", false, {"1-1"});
  proxy::ReplyInfo again;
  again.delivered.push_back({"1-1", {{"n", "1"}}});
  again.reheld = {"1-1"};
  s.ctl.onReply(1, exec, again);
  CHECK(s.view(1).held == 1);
  CHECK_FALSE(s.ctl.state(1).settledOnDelivery);
  s.ack(1, "1-1");
  CHECK(s.view(1).held == 0);
}

TEST_CASE("controller: a request the server refuses each time is counted until it succeeds") {
  Steps s;
  proxy::ReplyInfo refused;
  refused.error = true;
  refused.summary = "406 PRECONDITION_FAILED - inequivalent arg 'durable'";
  for (int i = 0; i < 3; ++i) s.ctl.onReply(1, s.send(1, "QUEUE_DECLARE"), refused);
  s.ctl.onReply(1, s.send(1, "CHANNEL_OPEN"), {}); // another verb's success leaves the count
  auto st = s.ctl.state(1);
  CHECK(st.refused["QUEUE_DECLARE"] == std::make_pair(3, refused.summary));
  s.ctl.onReply(1, s.send(1, "QUEUE_DECLARE"), {});
  CHECK(s.ctl.state(1).refused["QUEUE_DECLARE"].first == 0);
}

TEST_CASE("controller: a relay's steps are numbered apart: no VERB#k of the run reaches them") {
  History h;
  Controller ctl(h, {Fault::parse("before:COMMIT#1")});
  ctl.addProcess(1, "c1");
  ctl.addProcess(2, "r1");
  proxy::StepInfo info;
  info.verb = "COMMIT";
  const auto work = ctl.lastWork();
  for (int i = 0; i < 2; ++i) {
    proxy::StepToken t;
    CHECK(ctl.onRequest(2, proxy::Server::Pg, 1, info, t).kind == proxy::Decision::Kind::Pass);
  }
  // r1's COMMITs are no COMMIT#1 of the run, and move no consumer's work clock.
  CHECK(ctl.pendingFaults().size() == 1);
  CHECK(ctl.lastWork() == work);
  CHECK(ctl.state(2).steps == 2);
}

TEST_CASE("liveness: a keep-alive queued behind a blocking read is no work, and its reply leaves an empty read idle") {
  // Sarama sends its Heartbeat on the connection of its blocking Fetch: the reply waits behind the Fetch's.
  Steps s;
  auto fetch = s.send(1, "XREADGROUP", true);
  proxy::StepInfo beat;
  beat.verb = "HEARTBEAT";
  beat.keepAlive = true;
  proxy::StepToken hb;
  s.ctl.onRequest(1, proxy::Server::Broker, 1, beat, hb);
  CHECK(s.idle(1)); // a blocking read and a keep-alive in flight
  s.reply(1, fetch, {}, true); // the empty read comes back first
  CHECK(s.idle(1));
  s.ctl.onReply(1, hb, {});
  CHECK(s.idle(1)); // the keep-alive's reply: still the empty read's rest
  s.step(1, "BEGIN");
  CHECK_FALSE(s.idle(1));
}
