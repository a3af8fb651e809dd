// crash-on-40001 (wallet): the dedup-table strategy (a processed_messages row inserted in the same
// transaction as the credit, the credit only if the row is new, XACK after COMMIT, duplicates included),
// run at SERIALIZABLE isolation, with the bluntest handling of a retryable error: when PostgreSQL answers
// SQLSTATE 40001 (serialization_failure) or 40P01 (deadlock_detected), it prints one line to stderr and
// exits at once with status 75 (EX_TEMPFAIL), without a ROLLBACK (the server rolls the transaction back
// when the connection closes) and leaving the entry unacknowledged. It is correct, only slow: the
// harness starts another consumer, the entry is redelivered (XAUTOCLAIM), and the processed_messages row
// makes a retry of a transaction that did commit a no-op. Any other error (a broken connection, an
// ambiguous COMMIT) exits 1, as in dedup-table. Statements are those of dedup-table, prepared once at
// start (prepareWalletDedup: prepare_now) and executed with exec_prepared; libpqxx 6.4 begins a
// serializable transaction with one query, "BEGIN; SET TRANSACTION ISOLATION LEVEL SERIALIZABLE".
#include "wallet_dedup.h"

#include <cstdlib>
#include <iostream>
#include <optional>

using namespace idem::targets;

namespace {

constexpr int kExTempfail = 75; // sysexits.h EX_TEMPFAIL: temporary failure, try again

[[noreturn]] void exitTempfail(const Entry& e, const char* sqlstate, const std::exception& x) {
  std::cerr << "crash-on-40001: entry " << e.id << ": SQLSTATE " << sqlstate << " (" << oneLine(x.what())
            << "); exiting " << kExTempfail << " (EX_TEMPFAIL), the entry stays pending" << std::endl;
  std::exit(kExTempfail);
}

/// applyWalletOnce (wallet_dedup.h) at SERIALIZABLE isolation, on the statements prepareWalletDedup
/// prepared. Round trips: BEGIN (with SET TRANSACTION, one query), INSERT, [UPDATE], COMMIT. On 40001 or
/// 40P01, from any of them, it exits the process (75) without returning.
bool applyWalletOnceSerializable(pqxx::connection& db, const Entry& e) {
  // Outside the try block, so that the exit in a handler below comes before its destructor (which would
  // send ROLLBACK on a transaction still open).
  std::optional<pqxx::transaction<pqxx::serializable>> tx;
  try {
    tx.emplace(db);
    bool fresh = tx->exec_prepared("record_event", e.field("event_id")).affected_rows() == 1;
    if (fresh)
      tx->exec_prepared("credit_wallet", std::to_string(integerField(e, "amount")), e.field("wallet"));
    tx->commit();
    return fresh;
  } catch (const pqxx::serialization_failure& x) {
    exitTempfail(e, "40001", x);
  } catch (const pqxx::deadlock_detected& x) {
    exitTempfail(e, "40P01", x);
  }
}

} // namespace

int main() {
  return consumerMain("crash-on-40001", [] {
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    prepareWalletDedup(db);
    runConsumer(valkey, config, [&](const Entry& e) {
      applyWalletOnceSerializable(db, e);
      return Outcome::Ack;
    });
  });
}
