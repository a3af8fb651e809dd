#pragma once
/// The Idempotency-Key guarded by a lock in Valkey (docs/http-contract.md, "Keys in Valkey"), as the reference
/// targets http-valkey-lock and http-valkey-fenced share it. Per request, on its PostgreSQL connection and a
/// Valkey connection of its own (VALKEY_URL):
///
///   SELECT the key's stored answer (autocommit)              found: replay it, or 422 to another payload
///   fenced: INCR fence:<key>                                  the lock's token, larger than every earlier one
///   SET lock:<key> <token> NX PX $IDEMPOTENCY_LEASE_MS        not taken: 409, the key is in flight
///   BEGIN
///     fenced: the token claims the key's fence row in PostgreSQL, only if no larger token did (below)
///     SELECT the stored answer again (it may have committed since the first look): found: replay or 422
///     INSERT the order, UPDATE stock, INSERT the key row with the hash and the 201 answer
///   COMMIT
///   EVAL: DEL lock:<key> if it still holds the token         the lock released (its last step)
///
/// The answer is stored in PostgreSQL, in the order's own transaction: a kill anywhere leaves the order and
/// its answer together or neither, and a retry after the lease replays or executes once. The key rows
/// have no unique constraint: the lock is what keeps a key's requests apart.
#include "http_server.h"

namespace idem::targets::http {

enum class Fencing {
  None,  ///< http-valkey-lock: trusts the lock for as long as it runs
  Token, ///< http-valkey-fenced: the order's transaction checks that no newer holder took the key
};

/// The handler of POST /orders for serveMain.
Response valkeyLockedOrder(const Request& req, Db& db, Fencing fencing);

} // namespace idem::targets::http
