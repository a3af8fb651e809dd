#include "payments.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <stdexcept>
#include <thread>
#include <utility>

namespace idem::targets {

void preparePayments(pqxx::connection& db) {
  db.prepare("record_event", "INSERT INTO processed_events(event_id) VALUES ($1) ON CONFLICT DO NOTHING");
  db.prepare("debit_wallet", "UPDATE wallets SET balance_halala = balance_halala - $1 WHERE id = $2");
  db.prepare("book_payment", "INSERT INTO payments(event_id, wallet, amount_halala) VALUES ($1, $2, $3)");
  db.prepare_now("record_event");
  db.prepare_now("debit_wallet");
  db.prepare_now("book_payment");
}

Payments::Payments(Config c) : config(std::move(c)), db(config.databaseUrl), valkey(config.valkeyUrl) {
  preparePayments(db);
}

int paymentsMain(const char* name, const std::function<Handler(Payments&)>& strategy) {
  return consumerMain(name, [&] {
    Payments p(configFromEnv());
    const Handler handle = strategy(p);
    runConsumer(p.valkey, p.config, handle);
  });
}

bool bookOnce(pqxx::connection& db, const Entry& e, const std::function<void(pqxx::work&)>& alsoInTx) {
  pqxx::work tx(db);
  // libpqxx 6.4: affected_rows() is 0 when ON CONFLICT DO NOTHING skipped the row.
  const bool fresh = tx.exec_prepared("record_event", e.field("event_id")).affected_rows() == 1;
  if (fresh) {
    const std::string amount = std::to_string(integerField(e, "amount"));
    tx.exec_prepared("debit_wallet", amount, e.field("wallet"));
    tx.exec_prepared("book_payment", e.field("event_id"), e.field("wallet"), amount);
    if (alsoInTx) alsoInTx(tx);
  }
  tx.commit();
  return fresh;
}

std::string chargeBody(const Entry& e) {
  return nlohmann::json{{"event_id", e.field("event_id")}, {"wallet", e.field("wallet")},
                        {"amount", integerField(e, "amount")}}
      .dump();
}

void chargeKeyed(const std::string& sinkUrl, const std::string& body, const std::string& key, int attempts) {
  for (int attempt = 1;; ++attempt) {
    SinkAnswer a;
    try {
      a = charge(sinkUrl, "POST", "/charges", body, key);
    } catch (const std::runtime_error&) { // no answer: timed out, or the connection broke
      if (attempt >= attempts) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
      continue;
    }
    if (a.status >= 200 && a.status <= 299) return;
    if (a.status < 500 || attempt >= attempts)
      throw std::runtime_error("the charge " + key + " was answered " + std::to_string(a.status) + ": " + oneLine(a.body));
    std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
  }
}

void chargeOnce(const std::string& sinkUrl, const Entry& e, const std::optional<std::string>& key) {
  const SinkAnswer a = charge(sinkUrl, "POST", "/charges", chargeBody(e), key);
  if (a.status < 200 || a.status > 299)
    throw std::runtime_error("the charge of " + e.field("event_id") + " was answered " + std::to_string(a.status) +
                             ": " + oneLine(a.body));
}

} // namespace idem::targets
