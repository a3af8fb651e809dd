// poison-drop (wallet-poison): as poison-dlq, but an event it can never apply is only logged and
// acknowledged: no dead letter, so it is dropped without a trace. Fails poison:dead-lettered.
#include "poison.h"

#include <iostream>

using namespace idem::targets;

int main() {
  return consumerMain("poison-drop", [] {
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    preparePoison(db);
    runConsumer(valkey, config, [&](const Entry& e) {
      std::string why = applyUnlessPoison(db, e);
      if (!why.empty()) std::cerr << "poison-drop: skipping entry " << e.id << ": " << why << std::endl;
      return Outcome::Ack;
    });
  });
}
