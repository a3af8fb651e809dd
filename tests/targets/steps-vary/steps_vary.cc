// steps-vary (wallet, test consumer): the dedup-table strategy, correct, whose steps differ from run to run
// as a batch consumer's do. In every other run of idemproof's (odd IDEMPROOF_RUN numbers, a mark the
// contract says to leave alone, read here only to make the pattern repeatable) it sends one `SELECT 1`
// after its first COMMIT; in the others it does not. A sweep whose fault-free run is odd plans points at
// that SELECT which a point's run of an even number never reaches: the sweep runs such a point again, and
// the point counts as never fired only when none of its runs reached it.
#include "../run_parity.h"
#include "wallet_dedup.h"

#include <pqxx/pqxx>

using namespace idem::targets;

int main() {
  return consumerMain("steps-vary", [] {
    bool extraStep = oddRun();
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    prepareWalletDedup(db);
    Valkey valkey(config.valkeyUrl);
    runConsumer(valkey, config, [&](const Entry& e) {
      applyWalletOnce(db, e);
      if (extraStep) {
        extraStep = false;
        pqxx::nontransaction(db).exec("SELECT 1");
      }
      return Outcome::Ack;
    });
  });
}
