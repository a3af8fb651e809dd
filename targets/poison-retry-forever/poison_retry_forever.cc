// poison-retry-forever (wallet-poison): as poison-dlq, but an event it can never apply is left pending,
// as for any failure: "it will work next time". Its own XAUTOCLAIM takes it again every CLAIM_IDLE_MS,
// and it fails again, without end; nothing is dead-lettered. Fails poison:bounded (and the entry is stuck).
#include "poison.h"

#include <iostream>

using namespace idem::targets;

int main() {
  return consumerMain("poison-retry-forever", [] {
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    preparePoison(db);
    runConsumer(valkey, config, [&](const Entry& e) {
      std::string why = applyUnlessPoison(db, e);
      if (why.empty()) return Outcome::Ack;
      std::cerr << "poison-retry-forever: entry " << e.id << " failed (" << why << "), left for a retry" << std::endl;
      return Outcome::LeavePending;
    });
  });
}
