// flaky (wallet, test consumer): the dedup-table strategy, but each process, as it starts, reads two
// random bits from /dev/urandom (never seeded): with probability 1/4 (both bits set) this process ignores
// the dedup check for every entry it handles. It still records the event_id but credits the wallet even
// if the event was seen. Runs of the same schedule with a duplicate therefore disagree (mostly pass,
// sometimes a duplicate): the harness's determinism check must notice. One draw per process, rather than
// per entry, keeps the chance that a run fails near 1/4 however many duplicates a schedule has, so a few
// replays of any failing schedule show a pass with high probability (3 replays: 1 - (1/4)^3 ≈ 98%).
// Statements are sent with exec_params.
#include "consumer.h"

#include <pqxx/pqxx>

#include <fstream>
#include <stdexcept>

using namespace idem::targets;

namespace {

bool ignoreDedup() {
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  char byte = 0;
  if (!urandom.get(byte))
    throw std::runtime_error("cannot read /dev/urandom");
  return (static_cast<unsigned char>(byte) & 3) == 3;
}

} // namespace

int main() {
  return consumerMain("flaky", [] {
    const bool ignore = ignoreDedup();
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    runConsumer(valkey, config, [&](const Entry& e) {
      pqxx::work tx(db);
      auto recorded = tx.exec_params(
          "INSERT INTO processed_messages(event_id) VALUES ($1) ON CONFLICT DO NOTHING", e.field("event_id"));
      if (recorded.affected_rows() == 1 || ignore)
        tx.exec_params("UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2",
                       std::to_string(integerField(e, "amount")), e.field("wallet"));
      tx.commit();
      return Outcome::Ack;
    });
  });
}
