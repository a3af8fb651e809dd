#include "wallet_dedup.h"

namespace idem::targets {

void prepareWalletDedup(pqxx::connection& db) {
  db.prepare("record_event", "INSERT INTO processed_messages(event_id) VALUES ($1) ON CONFLICT DO NOTHING");
  db.prepare("credit_wallet", "UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2");
  db.prepare_now("record_event");
  db.prepare_now("credit_wallet");
}

bool applyWalletOnce(pqxx::connection& db, const Entry& e) {
  pqxx::work tx(db);
  // libpqxx 6.4: affected_rows() is 0 when ON CONFLICT DO NOTHING skipped the row.
  bool fresh = tx.exec_prepared("record_event", e.field("event_id")).affected_rows() == 1;
  if (fresh)
    tx.exec_prepared("credit_wallet", std::to_string(integerField(e, "amount")), e.field("wallet"));
  tx.commit();
  return fresh;
}

} // namespace idem::targets
