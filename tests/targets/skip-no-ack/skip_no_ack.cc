// skip-no-ack (wallet, test consumer): the dedup-table strategy, except that a duplicate it skips is NOT
// acknowledged. Its effects are right, but every duplicate stays pending (and is reclaimed by XAUTOCLAIM
// and skipped again, over and over): the harness must report those entries `stuck`, never hang.
#include "wallet_dedup.h"

using namespace idem::targets;

int main() {
  return consumerMain("skip-no-ack", [] {
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    prepareWalletDedup(db);
    runConsumer(valkey, config, [&](const Entry& e) {
      return applyWalletOnce(db, e) ? Outcome::Ack : Outcome::LeavePending;
    });
  });
}
