// dedup-valkey-short-ttl (wallet): dedup-valkey with marks that expire, as `SET seen:<id> NX EX 60` in
// production. It runs SET seen:<event_id> 1 NX PX <DEDUP_TTL_MS> (its manifest declares 20 s, the wallet's
// producer retries for 60 s); a fresh mark means apply the credit (BEGIN; UPDATE; COMMIT) and XACK, an
// existing one XACK without applying. It is NOT correct: once a mark has expired, a producer retry that
// is still within the retry window is applied again (`age:after:XACK#5` with a late retry:
// `dedup-window`); and, as dedup-valkey, a kill after SET and before COMMIT loses the payment.
#include "consumer.h"

#include <pqxx/pqxx>

#include <cstdlib>
#include <string>

using namespace idem::targets;

int main() {
  return consumerMain("dedup-valkey-short-ttl", [] {
    Config config = configFromEnv();
    const char* ttl = std::getenv("DEDUP_TTL_MS");
    const std::string ttlMs = ttl && *ttl ? ttl : "20000";
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    runConsumer(valkey, config, [&](const Entry& e) {
      ReplyPtr set = valkey.command({"SET", "seen:" + e.field("event_id"), "1", "NX", "PX", ttlMs});
      if (set->type == REDIS_REPLY_NIL)
        return Outcome::Ack; // marked within its TTL: a duplicate
      pqxx::work tx(db);
      tx.exec_params("UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2",
                     std::to_string(integerField(e, "amount")), e.field("wallet"));
      tx.commit();
      return Outcome::Ack;
    });
  });
}
