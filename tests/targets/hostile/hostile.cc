// hostile (wallet, test consumer): behaves exactly like dedup-table (correct), but writes markup to
// stdout and stderr at start and for every entry, and its manifest name holds markup too: the reports
// must show all of it as text, never as HTML.
#include "wallet_dedup.h"

#include <iostream>

using namespace idem::targets;

namespace {

void shout(const std::string& where) {
  std::cout << "<script>alert(1)</script> " << where << " \"><img src=x onerror=alert(2)>" << std::endl;
  std::cerr << "<script>alert(1)</script> " << where << " \"><img src=x onerror=alert(2)>" << std::endl;
}

} // namespace

int main() {
  return consumerMain("hostile", [] {
    shout("start");
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    prepareWalletDedup(db);
    runConsumer(valkey, config, [&](const Entry& e) {
      shout("entry " + e.id);
      applyWalletOnce(db, e);
      return Outcome::Ack;
    });
  });
}
