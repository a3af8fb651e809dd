// txStatement(): what a PostgreSQL step does to its connection's transaction, read from its first statement.
#include "checkers/checkers.h"
#include "checkers/tx_statement.h"

#include <catch2/catch.hpp>

using namespace idem;
using namespace idem::detail;
using K = TxStatement::Kind;

namespace {

ops::Step pg(const std::string& verb, const std::string& detail) {
  ops::Step s;
  s.server = "pg";
  s.verb = verb;
  s.detail = detail;
  return s;
}

} // namespace

TEST_CASE("tx statement: begin, commit and rollback in their spellings", "[tx]") {
  CHECK(txStatement(pg("BEGIN", "BEGIN")).kind == K::Begin);
  CHECK(txStatement(pg("BEGIN", "begin isolation level serializable")).kind == K::Begin);
  CHECK(txStatement(pg("START", "START TRANSACTION")).kind == K::Begin);
  CHECK(txStatement(pg("COMMIT", "COMMIT")).kind == K::Commit);
  CHECK(txStatement(pg("END", "end")).kind == K::Commit);
  CHECK(txStatement(pg("COMMIT", "COMMIT AND CHAIN")).kind == K::Commit);
  CHECK(txStatement(pg("ROLLBACK", "ROLLBACK")).kind == K::Rollback);
  CHECK(txStatement(pg("ROLLBACK", "rollback work")).kind == K::Rollback);
  CHECK(txStatement(pg("ABORT", "ABORT")).kind == K::Rollback);
}

TEST_CASE("tx statement: savepoints by name, upper-cased, up to the statement's end", "[tx]") {
  const TxStatement sp = txStatement(pg("SAVEPOINT", "SAVEPOINT sa_savepoint_1"));
  CHECK(sp.kind == K::Savepoint);
  CHECK(sp.savepoint == "SA_SAVEPOINT_1");
  const TxStatement rel = txStatement(pg("RELEASE", "RELEASE SAVEPOINT sa_savepoint_1"));
  CHECK(rel.kind == K::Release);
  CHECK(rel.savepoint == "SA_SAVEPOINT_1");
  CHECK(txStatement(pg("RELEASE", "release s2")).savepoint == "S2");
  const TxStatement to = txStatement(pg("ROLLBACK", "ROLLBACK TO SAVEPOINT s1; INSERT INTO t VALUES (1)"));
  CHECK(to.kind == K::RollbackTo);
  CHECK(to.savepoint == "S1");
  CHECK(txStatement(pg("ROLLBACK", "rollback transaction to s1")).kind == K::RollbackTo);
  CHECK(txStatement(pg("SAVEPOINT", "SAVEPOINT s1;")).savepoint == "S1");
}

TEST_CASE("tx statement: two-phase commit, and a PREPARE of a statement is none", "[tx]") {
  CHECK(txStatement(pg("PREPARE", "PREPARE TRANSACTION 'gid-1'")).kind == K::Prepare);
  CHECK(txStatement(pg("COMMIT", "COMMIT PREPARED 'gid-1'")).kind == K::Prepared);
  CHECK(txStatement(pg("ROLLBACK", "ROLLBACK PREPARED 'gid-1'")).kind == K::Prepared);
  CHECK(txStatement(pg("PREPARE", "PREPARE credit (int) AS UPDATE wallets SET balance = $1")).kind == K::Other);
}

TEST_CASE("tx statement: other statements and other servers are none", "[tx]") {
  CHECK(txStatement(pg("INSERT", "INSERT INTO processed VALUES ($1)")).kind == K::Other);
  CHECK(txStatement(pg("SELECT", "SELECT 1")).kind == K::Other);
  ops::Step exec = pg("COMMIT", "COMMIT");
  exec.server = "valkey"; // a Valkey transaction's EXEC is no PostgreSQL statement
  CHECK(txStatement(exec).kind == K::Other);
}

TEST_CASE("tx statement: one statement shown whole, not several nor one cut short", "[tx]") {
  CHECK(oneStatement(pg("COMMIT", "COMMIT")));
  CHECK(oneStatement(pg("COMMIT", "COMMIT;")));
  CHECK_FALSE(oneStatement(pg("BEGIN", "BEGIN; INSERT INTO t VALUES (1); COMMIT")));
  CHECK_FALSE(oneStatement(pg("INSERT", "INSERT INTO processed_messages (event_id) VALUES ($1) ON CONFLICT...")));
}

TEST_CASE("tx statement: a process working on two PostgreSQL connections at once is concurrent work, one after "
          "another is not", "[tx]") {
  auto stepOn = [](int conn, const std::string& verb) {
    ops::Step s = pg(verb, verb);
    s.conn = conn;
    return s;
  };
  History after; // c1 on connection 1, then on 2; c2 on its own 1 meanwhile
  for (const char* verb : {"BEGIN", "UPDATE", "COMMIT"}) after.append("c1", stepOn(1, verb));
  after.append("c2", stepOn(1, "BEGIN"));
  for (const char* verb : {"BEGIN", "UPDATE", "COMMIT"}) after.append("c1", stepOn(2, verb));
  after.append("c2", stepOn(1, "COMMIT"));
  CHECK_FALSE(concurrentWork(after.ops()));
  History atOnce; // c1's second connection begins while its first is in a transaction
  atOnce.append("c1", stepOn(1, "BEGIN"));
  atOnce.append("c1", stepOn(2, "BEGIN"));
  atOnce.append("c1", stepOn(1, "COMMIT"));
  atOnce.append("c1", stepOn(2, "COMMIT"));
  CHECK(concurrentWork(atOnce.ops()));
}
