// http-no-hash (orders): http-correct without the payload check. The key is guarded the same way (an
// advisory transaction lock, then the key row, the order and the stock in one transaction), and the
// payload's hash is even stored, but never compared: a key that is reused with a different payload gets
// the first request's stored answer back (201, another order's Location and body), nothing executes, and
// the client believes its new order was created. That is the bug: a mismatch must be rejected (422).
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
  if (!tx.exec_params("SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))", *key)[0][0].as<bool>()) {
    tx.abort();
    return inProgress();
  }
  pqxx::result found =
      tx.exec_params("SELECT status, location, body FROM idempotency_keys WHERE key = $1", *key);
  if (!found.empty()) {
    Response res = storedResponse(found[0]); // the bug: whatever the payload, replay
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

int main() { return serveMain("http-no-hash", handle); }
