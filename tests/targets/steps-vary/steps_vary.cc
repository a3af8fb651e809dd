// steps-vary (wallet, test consumer): the dedup-table strategy, correct, whose steps differ from run to run
// as a batch consumer's do. In every other run of idemproof's (odd IDEMPROOF_RUN numbers, a mark the
// contract says to leave alone, read here only to make the pattern repeatable) it sends one `SELECT 1`
// after its first COMMIT; in the others it does not. A sweep whose fault-free run is odd plans points at
// that SELECT which a point's run of an even number never reaches: the sweep runs such a point again, and
// the point counts as never fired only when none of its runs reached it.
#include "consumer.h"

#include <pqxx/pqxx>

#include <cstdlib>
#include <string>

using namespace idem::targets;

namespace {

/// Whether this run's number, the part of IDEMPROOF_RUN after its '/', is odd.
bool oddRun() {
  const char* run = std::getenv("IDEMPROOF_RUN");
  std::string s = run ? run : "";
  const auto slash = s.rfind('/');
  return slash != std::string::npos && slash + 1 < s.size() && (s.back() - '0') % 2 == 1;
}

} // namespace

int main() {
  return consumerMain("steps-vary", [] {
    bool extraStep = oddRun();
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    runConsumer(valkey, config, [&](const Entry& e) {
      pqxx::work tx(db);
      auto recorded = tx.exec_params(
          "INSERT INTO processed_messages(event_id) VALUES ($1) ON CONFLICT DO NOTHING", e.field("event_id"));
      if (recorded.affected_rows() == 1)
        tx.exec_params("UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2",
                       std::to_string(integerField(e, "amount")), e.field("wallet"));
      tx.commit();
      if (extraStep) {
        extraStep = false;
        pqxx::nontransaction(db).exec("SELECT 1");
      }
      return Outcome::Ack;
    });
  });
}
