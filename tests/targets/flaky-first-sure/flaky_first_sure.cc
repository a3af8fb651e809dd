// flaky-first-sure (wallet, test consumer): the dedup-table strategy with two bugs, one certain and one
// that comes and goes. It credits a copy of an event whenever its stream holds one entry (XLEN: a
// schedule of one event and no producer retry); and in every other run of idemproof's (odd IDEMPROOF_RUN numbers,
// a mark the contract says to leave alone, read here only to make the pattern repeatable) it credits
// every copy. So a longer schedule with a copy fails in every other run, and one of a single entry with
// a copy (a redelivery after a kill) fails every time: check must not stop at a failure whose replays disagreed, but
// shrink it to one that fails every time. Statements are sent with exec_params.
#include "consumer.h"
#include "../run_parity.h"

#include <pqxx/pqxx>

#include <string>

using namespace idem::targets;

int main() {
  return consumerMain("flaky-first-sure", [] {
    const bool creditEveryCopy = oddRun();
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    runConsumer(valkey, config, [&](const Entry& e) {
      pqxx::work tx(db);
      const bool single = valkey.command({"XLEN", config.stream})->integer <= 1;
      auto recorded = tx.exec_params(
          "INSERT INTO processed_messages(event_id) VALUES ($1) ON CONFLICT DO NOTHING", e.field("event_id"));
      if (recorded.affected_rows() == 1 || single || creditEveryCopy)
        tx.exec_params("UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2",
                       std::to_string(integerField(e, "amount")), e.field("wallet"));
      tx.commit();
      return Outcome::Ack;
    });
  });
}
