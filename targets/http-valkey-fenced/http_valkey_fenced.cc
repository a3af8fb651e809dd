// http-valkey-fenced (orders): http-valkey-lock with a fencing token (common/valkey_lock.h has the steps).
// The lock's token is `INCR fence:<key>`: every holder of the key's lock has a larger token than the ones
// before it. The order's transaction first writes its token into the key's row of key_fences, only if no
// larger token is there (INSERT … ON CONFLICT DO UPDATE … WHERE fence < token), and then looks for a stored
// answer again:
//
//  - A holder whose lease ran out while a newer one took the key finds a larger token: it executes nothing
//    and answers what the newer one stored (409 while that one still runs).
//  - The row stays locked until the transaction ends, so a newer holder that reaches it while an older one
//    is still inside its transaction waits for it, and then sees its stored answer: it replays it.
//
// Whatever the lease does, a key's transactions run one at a time and each looks for the answer of the ones
// before it: the key executes at most once. The lock only saves work (a retry in flight gets 409 at once).
#include "valkey_lock.h"

using namespace idem::targets::http;

int main() {
  return serveMain("http-valkey-fenced", [](const Request& req, Db& db) { return valkeyLockedOrder(req, db, Fencing::Token); });
}
