// http-check-then-insert (orders): the key checked by looking first, the HTTP twin of check-then-act.
// In one READ COMMITTED transaction:
//
//   SELECT request_hash, status, location, body FROM idempotency_keys WHERE key = $key
//     ORDER BY created_at LIMIT 1
//   found:     same hash → replay the stored answer; other hash → 422
//   not found: INSERT the order, UPDATE stock, INSERT the key row with the 201 answer; COMMIT; 201
//
// Sequentially it is right under any kill (the key row commits with the order, so a retry finds it or
// finds nothing). It takes no lock and idempotency_keys has NO unique constraint on key (schema.sql), so
// two requests of one key that run at once (a client retrying before the first answer, a burst) both
// see no row, both insert one and both execute: a double effect. There is no in-flight answer (409) at
// all. With several rows for one key, a later replay takes the oldest.
#include "orders.h"

#include <pqxx/pqxx>

using namespace idem::targets::http;

namespace {

Response handle(const Request& req, Db& db) {
  auto key = sfStringKey(req);
  if (!key) return missingKey();
  auto order = parseOrder(req);
  if (!order) return invalidBody();

  pqxx::work tx(db.conn());
  pqxx::result found = tx.exec_params("SELECT request_hash, status, location, body FROM idempotency_keys "
                                      "WHERE key = $1 ORDER BY created_at LIMIT 1",
                                      *key);
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
  tx.commit();
  return res;
}

} // namespace

int main() { return serveMain("http-check-then-insert", handle); }
