// http-naive (orders): no idempotency at all. It checks that the Idempotency-Key header is there and
// well formed (400 otherwise, like every target), and then executes every request: one READ COMMITTED
// transaction with the INSERT into orders and the UPDATE of stock, COMMIT, 201. The key is never stored,
// so every retry is a new order and takes the stock again (its only bug: double effects; no schema).
#include "orders.h"

#include <pqxx/pqxx>

using namespace idem::targets::http;

namespace {

Response handle(const Request& req, Db& db) {
  if (!sfStringKey(req)) return missingKey();
  auto order = parseOrder(req);
  if (!order) return invalidBody();
  pqxx::work tx(db.conn());
  Response res = executeOrder(tx, *order);
  tx.commit();
  return res;
}

} // namespace

int main() { return serveMain("http-naive", handle); }
