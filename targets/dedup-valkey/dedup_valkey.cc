// dedup-valkey (wallet): deduplication in Valkey, outside the database transaction. For each entry it
// runs SET seen:<event_id> 1 NX; if the key was set it applies the credit (BEGIN; UPDATE; COMMIT) and
// XACKs, if the key already existed it XACKs without applying. It is NOT correct: a kill after SET and
// before COMMIT leaves the event marked as seen but never applied, so the redelivered entry is skipped
// and the payment is lost. Duplicates proper (producer retries) are handled. The UPDATE is sent with
// exec_params (extended protocol, unnamed statement, one round trip).
#include "consumer.h"

#include <pqxx/pqxx>

using namespace idem::targets;

int main() {
  return consumerMain("dedup-valkey", [] {
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    runConsumer(valkey, config, [&](const Entry& e) {
      ReplyPtr set = valkey.command({"SET", "seen:" + e.field("event_id"), "1", "NX"});
      if (set->type == REDIS_REPLY_NIL)
        return Outcome::Ack; // seen before: a duplicate
      pqxx::work tx(db);
      tx.exec_params("UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2",
                     std::to_string(integerField(e, "amount")), e.field("wallet"));
      tx.commit();
      return Outcome::Ack;
    });
  });
}
