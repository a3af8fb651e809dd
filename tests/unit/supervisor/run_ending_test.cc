// The run-ending rule (supervisor/liveness.h): the run's moments, with written times and processes a real
// Controller keeps from written steps, go through RunEnding: settled, stalled, or go on.
#include "controller_feed.h"

#include <catch2/catch.hpp>

using namespace idem;
using namespace idem::test;
using liveness::Decision;

namespace {

/// c1 claims entry 1-2 again and again, reading nothing new in between: what the Controller keeps of it.
liveness::Process claimsAgain(Steps& s) {
  for (int i = 0; i < 4; ++i) {
    s.read(1, "XAUTOCLAIM", {"1-2"});
    s.read(1, "XREADGROUP", {}, true);
  }
  return s.view(1);
}

} // namespace

TEST_CASE("run ending: a slow consumer holding claimed entries is never stalled, however long it is silent") {
  liveness::RunEnding ending(50ms, 3020ms);
  Steps s;
  s.read(1, "XAUTOCLAIM", {"1-3", "1-4", "1-5", "1-6"});
  s.read(1, "XREADGROUP", {}, true);
  // 3.5 s, 60 s of silence: work is left, the consumer holds it.
  for (auto t : {0s, 1s, 3s, 4s, 60s})
    CHECK(ending.observe(t0 + t, moment({s.view(1)}, 4, t0), notParked).kind == Decision::Kind::Working);
}

TEST_CASE("run ending: every consumer idle with entries pending is a stall only after the stall time without work") {
  liveness::RunEnding ending(50ms, 3020ms);
  Steps s;
  s.read(1, "XAUTOCLAIM", {});
  s.read(1, "XREADGROUP", {}, true);
  REQUIRE(s.idle(1));
  // Entries pending at a dead consumer's name that this one never claims.
  CHECK(ending.observe(t0, moment({s.view(1)}, 2, t0), notParked).kind == Decision::Kind::Working);
  CHECK(ending.observe(t0 + 3s, moment({s.view(1)}, 2, t0), notParked).kind == Decision::Kind::Working);
  // Work by any process starts the count again.
  CHECK(ending.observe(t0 + 4s, moment({s.view(1)}, 2, t0 + 2s), notParked).kind == Decision::Kind::Working);
  Decision d = ending.observe(t0 + 5100ms, moment({s.view(1)}, 2, t0 + 2s), notParked);
  CHECK(d.kind == Decision::Kind::Stalled);
  CHECK(d.why == "every consumer idle for 3100 ms with 2 entries pending");
  CHECK(!d.spin); // after a fault, waited out once more (a client's own reconnect timer)
  // A busy process in between (it claimed them) resets the idle time.
  s.read(1, "XAUTOCLAIM", {"1-1", "1-2"});
  CHECK(ending.observe(t0 + 6s, moment({s.view(1)}, 2, t0 + 2s), notParked).kind == Decision::Kind::Working);
  s.ack(1, "1-1");
  s.ack(1, "1-2");
  s.read(1, "XAUTOCLAIM", {});
  CHECK(ending.observe(t0 + 7s, moment({s.view(1)}, 2, t0 + 2s), notParked).kind == Decision::Kind::Working);
}

TEST_CASE("run ending: entries sent under a read the broker holds to its wait are a stall only the stall time after that wait") {
  // The embedded Kafka broker answers a Fetch at its max wait (5 s), not when a record arrives meanwhile.
  liveness::RunEnding ending(50ms, 3020ms);
  Steps s;
  s.read(1, "XREADGROUP", {}, true);
  REQUIRE(s.idle(1));
  liveness::Moment m = moment({s.view(1)}, 1, t0);
  m.readsHeldUntil = t0 + 5s;
  CHECK(ending.observe(t0 + 4s, m, notParked).kind == Decision::Kind::Working);
  CHECK(ending.observe(t0 + 8s, m, notParked).kind == Decision::Kind::Working);
  Decision d = ending.observe(t0 + 8020ms, m, notParked);
  CHECK(d.kind == Decision::Kind::Stalled);
  CHECK(d.why == "every consumer idle for 3020 ms with 1 entry pending");
}

TEST_CASE("run ending: a spin is a stall once its entries were handed back for the stall time, only when every pending entry spins") {
  liveness::RunEnding ending(50ms, 3020ms);
  Steps s;
  liveness::Process v = claimsAgain(s);
  CHECK(v.spinning == std::set<std::string>{"1-2"});
  REQUIRE(v.spinSince);
  v.spinSince = t0; // first handed back at t0 (the controller's clock is the machine's: set on the view)
  CHECK(ending.observe(t0 + 4s, moment({v}, 2, t0 + 4s), notParked).kind == Decision::Kind::Working);
  // Handed back for a second only: a worker of the same consumer may still be on it.
  CHECK(ending.observe(t0 + 1s, moment({v}, 1, t0 + 1s), notParked).kind == Decision::Kind::Working);
  // Work done meanwhile (its own statements around each re-read) does not make it less of a spin.
  Decision d = ending.observe(t0 + 3020ms, moment({v}, 1, t0 + 3020ms), notParked);
  CHECK(d.kind == Decision::Kind::Stalled);
  CHECK(d.why == "1 entry re-read three times or more by the consumer holding it and never acknowledged");
  CHECK(d.spin); // no wait: proven as it is, after a fault too
}

TEST_CASE("run ending: no stall is proven while the harness holds a process, neither a spin nor every consumer idle") {
  liveness::RunEnding ending(50ms, 3020ms);
  Steps s;
  liveness::Process v = claimsAgain(s);
  v.spinSince = t0;
  liveness::Moment held = moment({v}, 1, t0);
  held.harnessHolds = true; // c1 works on it at last, and a hold stops it before its COMMIT
  CHECK(ending.observe(t0 + 10s, held, notParked).kind == Decision::Kind::Working);
  // The spin counts from the hold's end: what the broker handed again meanwhile, the process could not settle.
  CHECK(ending.observe(t0 + 10100ms, moment({v}, 1, t0), notParked).kind == Decision::Kind::Working);
  CHECK(ending.observe(t0 + 13030ms, moment({v}, 1, t0), notParked).kind == Decision::Kind::Stalled);

  liveness::RunEnding idle(50ms, 3020ms);
  Steps quiet;
  quiet.read(1, "XREADGROUP", {}, true);
  liveness::Moment m = moment({quiet.view(1)}, 2, t0);
  m.harnessHolds = true;
  CHECK(idle.observe(t0 + 1s, m, notParked).kind == Decision::Kind::Working);
  CHECK(idle.observe(t0 + 10s, m, notParked).kind == Decision::Kind::Working);
  // Idleness counts from the hold's end.
  CHECK(idle.observe(t0 + 11s, moment({quiet.view(1)}, 2, t0), notParked).kind == Decision::Kind::Working);
  CHECK(idle.observe(t0 + 14030ms, moment({quiet.view(1)}, 2, t0), notParked).kind == Decision::Kind::Stalled);
}

TEST_CASE("run ending: a consumer that claims its own entries again while it works on them a while is no spin") {
  liveness::RunEnding ending(50ms, 3020ms);
  Steps s;
  s.read(1, "XREADGROUP", {"1-1"});
  // Its claim loop hands 1-1 back to it every second while its worker calls out for 2.5 s.
  for (int i = 1; i <= 3; ++i) s.read(1, "XAUTOCLAIM", {"1-1"});
  liveness::Process v = s.view(1);
  CHECK(v.spinning == std::set<std::string>{"1-1"});
  v.spinSince = t0;
  CHECK(ending.observe(t0 + 2500ms, moment({v}, 1, t0), notParked).kind == Decision::Kind::Working);
  s.step(1, "COMMIT");
  s.ack(1, "1-1");
  CHECK(s.view(1).spinning.empty());
  CHECK(!s.view(1).spinSince);
}

TEST_CASE("run ending: settled once everything is acknowledged and every consumer idle for the settle time or parked") {
  liveness::RunEnding ending(50ms, 3020ms);
  Steps s;
  s.read(1, "XREADGROUP", {"1-1"});
  s.step(1, "COMMIT");
  // Everything acknowledged at the broker (by another process), this one still holds its copy: it is
  // waited for.
  CHECK(ending.observe(t0 + 1s, moment({s.view(1)}, 0, t0), notParked).kind == Decision::Kind::Working);
  s.ack(1, "1-1");
  s.read(1, "XREADGROUP", {}, true);
  CHECK(ending.observe(t0 + 10ms, moment({s.view(1)}, 0, t0), notParked).kind == Decision::Kind::Settling);
  CHECK(ending.observe(t0 + 10ms, moment({s.view(1)}, 0, t0), [] { return true; }).kind == Decision::Kind::Settled);
  CHECK(ending.observe(t0 + 60ms, moment({s.view(1)}, 0, t0), notParked).kind == Decision::Kind::Settled);
  liveness::Moment starting = moment({s.view(1)}, 0, t0);
  starting.toStart = true; // c2 of the schedule not started yet
  CHECK(ending.observe(t0 + 60ms, starting, notParked).kind == Decision::Kind::Working);
}

TEST_CASE("run ending: a broker that counts entries delivered before any reply carried them is waited out") {
  // XREADGROUP … NOACK: the group lists nothing pending once the server ran the read, while its reply is
  // still on the way to the proxy and the consumer sits in its blocking read. That is no proof of rest.
  liveness::RunEnding ending(50ms, 3020ms);
  Steps s;
  auto read = s.send(1, "XREADGROUP", true);
  liveness::Moment m = moment({s.view(1)}, 0, t0);
  m.unseen = true;
  CHECK(ending.observe(t0 + 10ms, m, [] { return true; }).kind == Decision::Kind::Settling);
  // Past the settle time too: a proxy slow to read the reply on a loaded machine is no end of the work.
  CHECK(ending.observe(t0 + 60ms, m, [] { return true; }).kind == Decision::Kind::Settling);
  CHECK(ending.observe(t0 + 3000ms, m, [] { return true; }).kind == Decision::Kind::Settling);
  // A reply that never comes (its connection ended with it): over once the stall time passed.
  CHECK(ending.observe(t0 + 3020ms, m, [] { return true; }).kind == Decision::Kind::Settled);
  // The reply comes (its entries acknowledged by their delivery, as NOACK has it): work, and nothing held.
  proxy::ReplyInfo r;
  r.delivered.push_back({"1-1", {{"n", "1"}}});
  r.settles = true;
  s.ctl.onReply(1, read, r);
  CHECK(s.ctl.seenDelivered({"1-1"}));
  CHECK_FALSE(s.ctl.seenDelivered({"1-1", "1-2"}));
  CHECK(s.view(1).held == 0);
  CHECK(s.history.ops().back().as<ops::Step>()->acked == std::vector<std::string>{"1-1"});
  s.read(1, "XREADGROUP", {}, true);
  CHECK(ending.observe(t0 + 20ms, moment({s.view(1)}, 0, t0), [] { return true; }).kind == Decision::Kind::Settled);
}

TEST_CASE("run ending: with an outbox relay, settled only once the outbox query counts no unsent row") {
  liveness::RunEnding ending(50ms, 3020ms);
  Steps s;
  s.read(1, "XREADGROUP", {"1-1"});
  s.ack(1, "1-1");
  s.read(1, "XREADGROUP", {}, true);
  liveness::Moment m = moment({s.view(1)}, 0, t0);
  m.outbox = 2; // the consumers are done, the relay is not: never settled, never a stall of the consumers
  CHECK(ending.observe(t0 + 60ms, m, [] { return true; }).kind == Decision::Kind::Working);
  CHECK(ending.observe(t0 + 10s, m, notParked).kind == Decision::Kind::Working);
  m.outbox = 0;
  CHECK(ending.observe(t0 + 10s, m, notParked).kind == Decision::Kind::Settled);
}
