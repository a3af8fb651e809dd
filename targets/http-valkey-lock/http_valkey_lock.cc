// http-valkey-lock (orders): the key's lock in Valkey, `SET lock:<key> <token> NX PX <lease>`, trusted for as
// long as the request runs (common/valkey_lock.h has the steps). The answer is stored in PostgreSQL in the
// order's own transaction, so a kill anywhere leaves both or neither, and a retry after the lease replays.
//
// The bug is the lease: nothing ties the transaction to the lock. When a step inside the transaction (after
// its look for a stored answer, before its COMMIT) outlasts the lease — a slow statement, a delay — the lock
// expires under the request; the client's retry takes it, finds no answer (the first transaction has not
// committed), and orders again. Both commit: two orders for one key (double-effect). The key rows have no
// unique constraint, as the lock is what is meant to keep a key's requests apart.
#include "valkey_lock.h"

using namespace idem::targets::http;

int main() {
  return serveMain("http-valkey-lock", [](const Request& req, Db& db) { return valkeyLockedOrder(req, db, Fencing::None); });
}
