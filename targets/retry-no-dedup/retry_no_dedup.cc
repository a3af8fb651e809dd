// retry-no-dedup (wallet): simple, plus the usual "resilience" of retrying on a lost connection. For each
// entry it runs BEGIN; UPDATE wallets SET balance_halala = balance_halala + <amount> WHERE id = <wallet>;
// COMMIT; then XACK, with no dedup key at all. When the PostgreSQL connection breaks (libpqxx throws
// broken_connection, or in_doubt_error when it is lost during COMMIT) it opens a new connection to the same
// DATABASE_URL (up to 10 attempts, 50 ms apart; then it gives up and exits 1) and runs the whole
// transaction again. It is NOT correct: after an ambiguous commit (the COMMIT took effect, its reply was
// lost with the connection) the retry applies the payment a second time; and, as in simple, a producer
// retry (same event_id) or a redelivery after a kill between COMMIT and XACK is applied twice. Only a
// broken connection is retried: any other PostgreSQL error (40001 included) and every Valkey error end
// the process with status 1, the entry left pending. Statements are sent as plain text (simple query
// protocol, values validated/quoted by the consumer), as in simple.
#include "consumer.h"

#include <pqxx/pqxx>

#include <chrono>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <thread>

using namespace idem::targets;

namespace {

constexpr int kConnectAttempts = 10;
constexpr std::chrono::milliseconds kConnectPause{50};

/// A new connection to `url`: up to kConnectAttempts tries, kConnectPause apart. Throws the last failure.
std::unique_ptr<pqxx::connection> reconnect(const std::string& url) {
  std::string last;
  for (int attempt = 1; attempt <= kConnectAttempts; ++attempt) {
    if (attempt > 1) std::this_thread::sleep_for(kConnectPause);
    try {
      return std::make_unique<pqxx::connection>(url);
    } catch (const pqxx::broken_connection& e) {
      last = oneLine(e.what());
    }
  }
  throw std::runtime_error("cannot reconnect to PostgreSQL after " + std::to_string(kConnectAttempts) +
                           " attempts: " + last);
}

} // namespace

int main() {
  return consumerMain("retry-no-dedup", [] {
    Config config = configFromEnv();
    auto db = std::make_unique<pqxx::connection>(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    runConsumer(valkey, config, [&](const Entry& e) {
      const long long amount = integerField(e, "amount");
      for (;;) {
        std::string lost;
        try {
          pqxx::work tx(*db);
          tx.exec("UPDATE wallets SET balance_halala = balance_halala + " + std::to_string(amount) +
                  " WHERE id = " + tx.quote(e.field("wallet")));
          tx.commit();
          return Outcome::Ack;
        } catch (const pqxx::in_doubt_error& x) {
          lost = "commit in doubt: " + oneLine(x.what());
        } catch (const pqxx::broken_connection& x) {
          lost = "connection lost: " + oneLine(x.what());
        }
        // The transaction object is gone (rolled back, or in doubt) before its connection is replaced.
        std::cerr << "retry-no-dedup: entry " << e.id << ": " << lost
                  << "; reconnecting and running the transaction again" << std::endl;
        db.reset();
        db = reconnect(config.databaseUrl);
      }
    });
  });
}
