// http-key-outside-tx (orders): the key recorded in a transaction of its own, before the effect, with no
// lease to take it over. Three READ COMMITTED transactions per executed request:
//
//   1. INSERT INTO idempotency_keys(key, request_hash, state) VALUES ($key, $hash, 'in_progress')
//        ON CONFLICT DO NOTHING; nothing inserted: SELECT the row; COMMIT.
//      The key existed: 'in_progress' → 409; 'completed' → other hash 422, same hash replay.
//   2. INSERT the order, UPDATE stock, COMMIT.
//   3. UPDATE idempotency_keys SET state = 'completed', status, location, body; COMMIT; answer 201.
//
// Without a crash it is right: a concurrent duplicate waits on the key's unique index for the short
// transaction 1 and then finds 'in_progress' (409), a later one finds 'completed' (replay). The bug is
// the crash: a kill after COMMIT 1 and before COMMIT 3 leaves the key 'in_progress' forever (nothing ever
// expires it: IDEMPOTENCY_LEASE_MS is ignored), so every retry of that key gets 409 for good — a stuck
// key (and, after COMMIT 2, an order the client never hears of).
#include "orders.h"

#include <pqxx/pqxx>

using namespace idem::targets::http;

namespace {

/// ANSWER_AUTOCOMMIT=1 (tests/targets/http-key-outside-tx-autocommit): step 3 is one UPDATE in autocommit.
const bool kAnswerAutocommit = envInt("ANSWER_AUTOCOMMIT", 0) == 1;

Response handle(const Request& req, Db& db) {
  auto key = sfStringKey(req);
  if (!key) return missingKey();
  auto order = parseOrder(req);
  if (!order) return invalidBody();
  pqxx::connection& c = db.conn();

  { // 1. claim the key, committed on its own
    pqxx::work t1(c);
    pqxx::result ins = t1.exec_params("INSERT INTO idempotency_keys(key, request_hash, state) "
                                      "VALUES ($1, $2, 'in_progress') ON CONFLICT DO NOTHING",
                                      *key, order->hash);
    if (ins.affected_rows() == 0) { // libpqxx 6.4: 0 when ON CONFLICT skipped the row
      pqxx::result found = t1.exec_params(
          "SELECT request_hash, state, status, location, body FROM idempotency_keys WHERE key = $1", *key);
      t1.commit();
      if (found.empty()) return errorResponse(500, "key vanished"); // nothing ever deletes one
      const pqxx::row& row = found[0];
      if (row["state"].as<std::string>() != "completed") return inProgress();
      if (row["request_hash"].as<std::string>() != order->hash) return keyReused(422);
      return storedResponse(row);
    }
    t1.commit();
  }
  Response res;
  { // 2. the effect
    pqxx::work t2(c);
    res = executeOrder(t2, *order);
    t2.commit();
  }
  { // 3. record the answer (a kill before this COMMIT strands the key 'in_progress')
    static const char* kComplete = "UPDATE idempotency_keys SET state = 'completed', status = $2, location = $3, "
                                   "body = $4 WHERE key = $1";
    if (kAnswerAutocommit) { // one statement, no BEGIN/COMMIT: the server's last step is the UPDATE itself
      pqxx::nontransaction t3(c);
      t3.exec_params(kComplete, *key, res.status, res.location, res.body);
    } else {
      pqxx::work t3(c);
      t3.exec_params(kComplete, *key, res.status, res.location, res.body);
      t3.commit();
    }
  }
  return res;
}

} // namespace

int main() { return serveMain("http-key-outside-tx", handle); }
