// Where a timed-out HTTP request is held (supervisor/http_hold.h): the rehearsal a schedule gets, the hold
// points learned from written rehearsal histories (a COMMIT, an autocommit statement, a Valkey command last),
// and the gate of a real Controller holding the learned occurrence of a verb, not an earlier one.
#include "supervisor/controller.h"
#include "supervisor/http_hold.h"

#include <catch2/catch.hpp>

using namespace idem;

namespace {

ClientOp send(int key, ClientOp::Wait wait = ClientOp::Wait::Answer) {
  ClientOp c;
  c.kind = ClientOp::Kind::Send;
  c.key = c.body = key;
  c.wait = wait;
  return c;
}

/// A rehearsal history written as the loop records it: per request, its record, its steps, its answer.
struct Written {
  History h;
  int id = 0;
  void request(int op, const std::vector<std::pair<std::string, std::string>>& steps, bool answered = true) {
    ops::Request r;
    r.id = ++id;
    r.op = op;
    h.append("client", r);
    for (const auto& [server, verb] : steps) {
      ops::Step s;
      s.server = server;
      s.verb = verb;
      s.tReqUs = h.nowUs();
      h.append("s1", s);
    }
    ops::Response a;
    a.id = r.id;
    a.outcome = "answered";
    a.status = 201;
    if (answered) h.append("client", a);
  }
};

} // namespace

TEST_CASE("http hold: the rehearsal plays the requests up to the last timeout, answered, without faults") {
  Schedule s;
  s.client = {send(1), send(1, ClientOp::Wait::Timeout), send(2), send(2, ClientOp::Wait::Timeout), send(1)};
  s.faults = {Fault::kill(When::After, "COMMIT", 1)};
  CHECK(hasTimeout(s));
  Schedule r = rehearsalOf(s);
  REQUIRE(r.client.size() == 4);
  CHECK(r.faults.empty());
  for (const auto& c : r.client) CHECK(c.wait == ClientOp::Wait::Answer);
  s.client = {send(1), send(1)};
  CHECK_FALSE(hasTimeout(s));
  CHECK(rehearsalOf(s).client.empty());
}

TEST_CASE("http hold: the last step before the answer is learned whatever it is: COMMIT, autocommit, Valkey") {
  Written w;
  w.request(1, {{"pg", "BEGIN"}, {"pg", "INSERT"}, {"pg", "UPDATE"}, {"pg", "COMMIT"}});          // a transaction
  w.request(2, {{"pg", "INSERT"}, {"pg", "UPDATE"}, {"pg", "UPDATE"}});                           // autocommit
  w.request(3, {{"valkey", "SET"}, {"pg", "BEGIN"}, {"pg", "COMMIT"}, {"valkey", "SET"}});        // SET … XX last
  w.request(4, {});                                                                                // no step
  w.request(5, {{"pg", "SELECT"}}, false);                                                         // no answer
  auto points = learnHoldPoints(w.h.ops());
  CHECK(points.at(1) == HoldPoint{"COMMIT", 1, "pg"});
  CHECK(points.at(2) == HoldPoint{"UPDATE", 2, "pg"});
  CHECK(points.at(3) == HoldPoint{"SET", 2, "valkey"});
  CHECK(points.count(4) == 0);
  CHECK(points.count(5) == 0);
  CHECK(describe(points.at(3)) == "SET (valkey), the 2nd SET after the request");
}

TEST_CASE("http hold: a pool's clean-up after the COMMIT is no hold point, the COMMIT is") {
  Written w;
  // asyncpg's reset on release (one simple query: SELECT pg_advisory_unlock_all(); CLOSE ALL; …; RESET ALL).
  w.request(1, {{"pg", "BEGIN"}, {"pg", "SELECT"}, {"pg", "INSERT"}, {"pg", "COMMIT"}, {"pg", "SELECT"}});
  // SQLAlchemy's ROLLBACK when its connection goes back to the pool, then a read of what was stored.
  w.request(2, {{"pg", "BEGIN"}, {"pg", "INSERT"}, {"pg", "COMMIT"}, {"pg", "ROLLBACK"}, {"pg", "SELECT"}});
  // Without a COMMIT before it, a SELECT last may be the effect itself (a function in autocommit).
  w.request(3, {{"pg", "INSERT"}, {"pg", "SELECT"}});
  // A write after the COMMIT is the request's work: it stays the hold point.
  w.request(4, {{"pg", "BEGIN"}, {"pg", "COMMIT"}, {"pg", "UPDATE"}, {"pg", "SELECT"}});
  auto points = learnHoldPoints(w.h.ops());
  CHECK(points.at(1) == HoldPoint{"COMMIT", 1, "pg"});
  CHECK(points.at(2) == HoldPoint{"COMMIT", 1, "pg"});
  CHECK(points.at(3) == HoldPoint{"SELECT", 1, "pg"});
  CHECK(points.at(4) == HoldPoint{"UPDATE", 1, "pg"});
}

TEST_CASE("http hold: set-up steps and steps of an earlier request are no request's hold point") {
  Written w;
  w.request(1, {{"pg", "COMMIT"}});
  ops::Request r;
  r.id = ++w.id;
  r.op = 2;
  w.h.append("client", r);
  ops::Step setUp;
  setUp.server = "pg";
  setUp.verb = "SET";
  setUp.setUp = true;
  setUp.tReqUs = w.h.nowUs();
  w.h.append("s1", setUp);
  ops::Step late; // a step whose request left before r2 was written
  late.server = "pg";
  late.verb = "SELECT";
  late.tReqUs = 0;
  w.h.append("s1", late);
  ops::Response a;
  a.id = r.id;
  a.outcome = "answered";
  w.h.append("client", a);
  auto points = learnHoldPoints(w.h.ops());
  CHECK(points.count(1) == 1);
  CHECK(points.count(2) == 0);
}

TEST_CASE("http hold: the gate lets the earlier occurrences of its verb pass and holds the learned one") {
  History h;
  Controller ctl(h, {});
  ctl.addProcess(1, "s1");
  ctl.gate("UPDATE", 1, "r1's client timeout", 1);
  proxy::StepInfo update;
  update.verb = "UPDATE";
  proxy::StepToken t1, t2, t3;
  CHECK(ctl.onRequest(1, proxy::Server::Pg, 1, update, t1).kind == proxy::Decision::Kind::Pass);
  ctl.onReply(1, t1, proxy::ReplyInfo{});
  CHECK(ctl.gated() == 0);
  CHECK(ctl.onRequest(1, proxy::Server::Pg, 1, update, t2).kind == proxy::Decision::Kind::Hold);
  CHECK(ctl.gated() == 1);
  CHECK(ctl.onRequest(1, proxy::Server::Pg, 1, update, t3).kind == proxy::Decision::Kind::Pass); // held one only
  ctl.openGate("the next request has its answer");
  CHECK(ctl.gated() == 0);
}

TEST_CASE("http hold: a step a delay fault holds is counted until its reply") {
  History h;
  Controller ctl(h, {Fault::parse("delay:before:INSERT#1:100")});
  ctl.addProcess(1, "s1");
  proxy::StepInfo insert;
  insert.verb = "INSERT";
  proxy::StepToken t;
  CHECK(ctl.onRequest(1, proxy::Server::Pg, 1, insert, t).kind == proxy::Decision::Kind::Hold);
  CHECK(ctl.delayed() == 1);
  ctl.onReply(1, t, proxy::ReplyInfo{});
  CHECK(ctl.delayed() == 0);
}
