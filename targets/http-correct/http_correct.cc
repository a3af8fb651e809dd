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
#include "orders.h"

#include <pqxx/pqxx>

using namespace idem::targets::http;

namespace {

Response handle(const Request& req, Db& db) {
  auto key = sfStringKey(req);
  if (!key) return missingKey();
  auto order = parseOrder(req.body);
  if (!order) return invalidBody();

  pqxx::work tx(db.conn());
  if (!tx.exec_params("SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))", *key)[0][0].as<bool>()) {
    tx.abort(); // holds nothing: just end the transaction
    return inProgress();
  }
  pqxx::result found = tx.exec_params(
      "SELECT request_hash, status, location, body FROM idempotency_keys WHERE key = $1", *key);
  if (!found.empty()) {
    Response res = found[0]["request_hash"].as<std::string>() == order->hash ? storedResponse(found[0])
                                                                              : keyReused(422);
    tx.commit();
    return res;
  }
  Response res = executeOrder(tx, *order);
  tx.exec_params("INSERT INTO idempotency_keys(key, request_hash, status, location, body) "
                 "VALUES ($1, $2, $3, $4, $5)",
                 *key, order->hash, res.status, res.location, res.body);
  tx.commit(); // a throw here (lost connection, in doubt) is a 503, never stored
  return res;
}

} // namespace

int main() { return serveMain("http-correct", handle); }
