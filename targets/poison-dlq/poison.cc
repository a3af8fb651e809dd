#include "poison.h"

#include <charconv>

namespace idem::targets {

void preparePoison(pqxx::connection& db) {
  db.prepare("record_event", "INSERT INTO processed_messages(event_id) VALUES ($1) ON CONFLICT DO NOTHING");
  db.prepare("credit_wallet", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
  db.prepare_now("record_event");
  db.prepare_now("credit_wallet");
}

std::string applyUnlessPoison(pqxx::connection& db, const Entry& e) {
  const std::string& text = e.field("amount");
  long long amount = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), amount);
  if (ec != std::errc() || end != text.data() + text.size() || amount <= 0)
    return "amount '" + text + "' is not a positive integer";
  pqxx::work tx(db);
  bool fresh = tx.exec_prepared("record_event", e.field("event_id")).affected_rows() == 1;
  if (fresh && tx.exec_prepared("credit_wallet", std::to_string(amount), e.field("wallet")).affected_rows() == 0) {
    tx.abort();
    return "no wallet '" + e.field("wallet") + "'";
  }
  tx.commit();
  return "";
}

} // namespace idem::targets
