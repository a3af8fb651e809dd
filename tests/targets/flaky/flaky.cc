// flaky (wallet, test consumer): the dedup-table strategy, but for each entry a fair coin read from
// /dev/urandom (never seeded) decides whether the dedup check is honoured. On heads it behaves like
// dedup-table; on tails it still records the event_id but credits the wallet even if the event was seen.
// Runs of the same schedule with a duplicate therefore disagree: the harness's determinism check must
// notice. Statements are sent with exec_params.
#include "consumer.h"

#include <pqxx/pqxx>

#include <fstream>
#include <stdexcept>

using namespace idem::targets;

namespace {

bool coin(std::ifstream& urandom) {
  char byte = 0;
  if (!urandom.get(byte))
    throw std::runtime_error("cannot read /dev/urandom");
  return (static_cast<unsigned char>(byte) & 1) != 0;
}

} // namespace

int main() {
  return consumerMain("flaky", [] {
    std::ifstream urandom("/dev/urandom", std::ios::binary);
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    runConsumer(valkey, config, [&](const Entry& e) {
      bool honourCheck = coin(urandom);
      pqxx::work tx(db);
      auto recorded = tx.exec_params(
          "INSERT INTO processed_messages(event_id) VALUES ($1) ON CONFLICT DO NOTHING", e.field("event_id"));
      if (recorded.affected_rows() == 1 || !honourCheck)
        tx.exec_params("UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2",
                       std::to_string(integerField(e, "amount")), e.field("wallet"));
      tx.commit();
      return Outcome::Ack;
    });
  });
}
