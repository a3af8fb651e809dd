// http-correct (orders): the Idempotency-Key done right, in ONE READ COMMITTED transaction per request:
//
//   SELECT pg_try_advisory_xact_lock(hashtextextended($key, 0))   false: 409, the key is in flight
//   SELECT request_hash, status, location, body FROM idempotency_keys WHERE key = $key
//     found, same hash:      replay the stored status, Location and body byte for byte
//     found, other hash:     422, no effect
//     not found:             INSERT the order, UPDATE stock, INSERT the key row with the hash and the
//                            201 answer, COMMIT, answer 201
//
// The advisory lock is what makes the check safe: two requests of one key never both pass the SELECT,
// and the second is told 409 at once instead of waiting. It is a transaction lock, so it dies with the
// transaction: a kill anywhere (even after COMMIT left, before its reply came back) leaves either
// nothing or everything (order, stock, key row), and PostgreSQL drops the lock when the dead process's
// connection closes. A retry then executes afresh exactly once, or replays. The lock is released only
// after the commit is visible, so the retry that gets the lock next sees the key row. No lease is
// needed (IDEMPOTENCY_LEASE_MS is unused). A missing or malformed key is 400 without touching
// PostgreSQL; 5xx answers are never stored.
//
// Three variants of the policy, chosen by the manifest's env (tests/targets/http-correct-*):
//   IN_FLIGHT_WAIT=1     in_flight "wait": pg_advisory_xact_lock blocks a request of a key in flight until
//                        the first one's transaction ends (SET LOCAL lock_timeout = the lease: then 409),
//                        and it then finds the key row and replays it
//   REPLAY_5XX=1         replay_5xx: when PostgreSQL refuses the work (an error answer, 40001 included; not
//                        a lost connection), the key row is written in a transaction of its own with the 500
//                        answer, which every retry then gets
//   KEY_RETENTION_MS=N   retention_ms: a key row older than N ms is deleted when its key comes again, and
//                        the request executes afresh
// Both parse JSON and form bodies and hash them per IDEMPOTENCY_PAYLOAD_EQUIVALENCE (orders.h).
#include "orders.h"

#include <pqxx/pqxx>

#include <optional>

using namespace idem::targets::http;

namespace {

const bool kWait = envInt("IN_FLIGHT_WAIT", 0) == 1;
const bool kReplay5xx = envInt("REPLAY_5XX", 0) == 1;
const long long kRetentionMs = envInt("KEY_RETENTION_MS", 0); // 0: kept for good
const long long kLeaseMs = envInt("IDEMPOTENCY_LEASE_MS", 2000);

/// The request's transaction: its answer, or nullopt when PostgreSQL refused the work with an error (under
/// REPLAY_5XX: the caller stores a 500 for the key).
std::optional<Response> attempt(const std::string& key, const Order& order, Db& db) {
  pqxx::work tx(db.conn());
  if (kWait) {
    tx.exec("SET LOCAL lock_timeout = " + std::to_string(kLeaseMs));
    try {
      tx.exec_params("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", key);
    } catch (const pqxx::sql_error& e) {
      if (e.sqlstate() != "55P03") throw; // lock_not_available: the first request outlived the lease
      tx.abort();
      return inProgress();
    }
  } else if (!tx.exec_params("SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))", key)[0][0].as<bool>()) {
    tx.abort(); // holds nothing: just end the transaction
    return inProgress();
  }
  if (kRetentionMs > 0)
    tx.exec_params("DELETE FROM idempotency_keys WHERE key = $1 AND created_at < clock_timestamp() - $2 * interval '1 millisecond'",
                   key, kRetentionMs);
  pqxx::result found = tx.exec_params(
      "SELECT request_hash, status, location, body FROM idempotency_keys WHERE key = $1", key);
  if (!found.empty()) {
    Response res = found[0]["request_hash"].as<std::string>() == order.hash ? storedResponse(found[0])
                                                                             : keyReused(422);
    tx.commit();
    return res;
  }
  try {
    Response res = executeOrder(tx, order);
    tx.exec_params("INSERT INTO idempotency_keys(key, request_hash, status, location, body) "
                   "VALUES ($1, $2, $3, $4, $5)",
                   key, order.hash, res.status, res.location, res.body);
    tx.commit(); // a throw here (lost connection, in doubt) is a 503, never stored
    return res;
  } catch (const pqxx::failure& e) {
    // PostgreSQL answered an error (a statement refused, a transaction rolled back: 40001 too), as opposed
    // to a connection lost or a COMMIT in doubt, where the outcome is unknown and nothing can be stored.
    const bool refused = dynamic_cast<const pqxx::sql_error*>(&e) || dynamic_cast<const pqxx::transaction_rollback*>(&e);
    if (!kReplay5xx || !refused) throw;
    try {
      tx.abort();
    } catch (const pqxx::failure&) {
      // a failed COMMIT left nothing to roll back
    }
    return std::nullopt;
  }
}

Response handle(const Request& req, Db& db) {
  auto key = sfStringKey(req);
  if (!key) return missingKey();
  auto order = parseOrder(req);
  if (!order) return invalidBody();
  if (auto res = attempt(*key, *order, db)) return *res;
  // REPLAY_5XX: the work failed for good; the failure is the key's answer from now on.
  Response failed = errorResponse(500, "order failed");
  pqxx::work store(db.conn());
  pqxx::result stored = store.exec_params("INSERT INTO idempotency_keys(key, request_hash, status, location, body) "
                                          "VALUES ($1, $2, $3, NULL, $4) ON CONFLICT (key) DO NOTHING RETURNING key",
                                          *key, order->hash, failed.status, failed.body);
  if (stored.empty()) { // another request of the key wrote its row meanwhile: that is the key's answer
    pqxx::result found = store.exec_params(
        "SELECT request_hash, status, location, body FROM idempotency_keys WHERE key = $1", *key);
    failed = found[0]["request_hash"].as<std::string>() == order->hash ? storedResponse(found[0]) : keyReused(422);
  }
  store.commit();
  return failed;
}

} // namespace

int main() { return serveMain("http-correct", handle); }
