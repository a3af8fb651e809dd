#pragma once
/// The wallet-poison strategies shared by targets/poison-dlq, poison-drop and poison-retry-forever: the
/// dedup-table credit of an event, unless the event can never be applied.
#include "consumer.h"

#include <pqxx/pqxx>

#include <string>

namespace idem::targets {

/// Prepares dedup-table's statements (record_event, credit_wallet) on `db`.
void preparePoison(pqxx::connection& db);

/// Credits e once, as dedup-table does (BEGIN, INSERT, UPDATE, COMMIT), and returns "". An event that can
/// never be applied is not: its amount is not a positive integer (nothing is sent), or its wallet has no
/// row (the transaction rolls back); it returns why.
std::string applyUnlessPoison(pqxx::connection& db, const Entry& e);

} // namespace idem::targets
