// no-reconnect (wallet): the dedup-table strategy (a processed_messages row inserted in the same
// transaction as the credit, the credit only if the row is new, XACK after COMMIT, duplicates included),
// with one connection to PostgreSQL for the life of the process and no recovery when it breaks: on the
// first broken connection (libpqxx broken_connection, or in_doubt_error when it is lost during COMMIT) it
// prints one line to stderr, and from then on every entry's handler fails at once on the dead connection
// (no round trip, no sleep) and leaves the entry pending. The process keeps looping on Valkey: XAUTOCLAIM
// hands its own pending entries back to it, it fails them again and never acknowledges them. It is NOT
// correct: after a dropped connection it never finishes its work (the harness reports the entries
// stuck). Under kills alone it is dedup-table: a new process gets a new connection. Any other error
// (40001 included) exits 1, as in dedup-table. Statements are prepared once at start (prepareWalletDedup:
// prepare_now) and executed with exec_prepared.
//
// libpqxx 6.4 would reconnect by itself: the first use of a broken connection throws (and drops it), the
// next one opens a new connection with the same options, and a BEGIN that got no result at all is re-sent
// on a new connection. inhibit_reactivation(true), deprecated in 6.4 but still the only switch, turns that
// off: every later use throws broken_connection without a round trip.
#include "wallet_dedup.h"

#include <iostream>

using namespace idem::targets;

int main() {
  return consumerMain("no-reconnect", [] {
    Config config = configFromEnv();
    pqxx::connection db(config.databaseUrl);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    db.inhibit_reactivation(true);
#pragma GCC diagnostic pop
    Valkey valkey(config.valkeyUrl);
    prepareWalletDedup(db);
    bool reported = false;
    runConsumer(valkey, config, [&](const Entry& e) {
      std::string lost;
      try {
        applyWalletOnce(db, e);
        return Outcome::Ack;
      } catch (const pqxx::in_doubt_error& x) {
        lost = "commit in doubt: " + oneLine(x.what());
      } catch (const pqxx::broken_connection& x) {
        lost = "connection lost: " + oneLine(x.what());
      }
      if (!reported)
        std::cerr << "no-reconnect: entry " << e.id << ": " << lost
                  << "; not reconnecting: every entry stays pending from now on" << std::endl;
      reported = true;
      return Outcome::LeavePending;
    });
  });
}
