#pragma once
/// The payments scenario's booking and charge, shared by the sink targets (targets/sink-*): each event
/// debits its wallet and books a payments row in one transaction, with a processed_events row as its dedup;
/// and its charge at the provider (the sink) is POST /charges with {"event_id", "wallet", "amount"}.
#include "consumer.h"
#include "sink_client.h"

#include <pqxx/pqxx>

#include <functional>
#include <optional>

namespace idem::targets {

/// Prepares "record_event", "debit_wallet" and "book_payment" on `db` now.
void preparePayments(pqxx::connection& db);

/// What a payments consumer works with: its settings (configFromEnv), its PostgreSQL connection with the
/// booking's statements prepared (preparePayments) and its Valkey connection.
struct Payments {
  explicit Payments(Config c);
  Config config;
  pqxx::connection db;
  Valkey valkey;
};

/// The whole main of payments consumer `name` (consumerMain: SIGTERM, exit status): connects (Payments),
/// asks `strategy` for its handler — the strategy reads SINK_URL and prepares statements of its own there —
/// and runs the stream loop with it until SIGTERM.
int paymentsMain(const char* name, const std::function<Handler(Payments&)>& strategy);

/// In one transaction: records e's event_id in processed_events (ON CONFLICT DO NOTHING) and, only if it was
/// new, debits e's amount from e's wallet, books a payments row and runs `alsoInTx` (an outbox row).
/// Returns whether it was new (booked now).
bool bookOnce(pqxx::connection& db, const Entry& e, const std::function<void(pqxx::work&)>& alsoInTx = {});

/// The charge's JSON body for `e`: {"amount": N, "event_id": "...", "wallet": "..."} (the same bytes every
/// time, so that a retry with a key is the same payload).
std::string chargeBody(const Entry& e);

/// Charges `body` at the sink with header Idempotency-Key: `key`, sending the same bytes again on a 5xx answer,
/// a timeout or a broken connection, up to `attempts` times; throws when no 2xx came (or a 4xx did).
void chargeKeyed(const std::string& sinkUrl, const std::string& body, const std::string& key, int attempts = 5);

/// Charges `e` at the sink once, with `key` when given: throws when the answer is not a 2xx.
void chargeOnce(const std::string& sinkUrl, const Entry& e, const std::optional<std::string>& key = std::nullopt);

} // namespace idem::targets
