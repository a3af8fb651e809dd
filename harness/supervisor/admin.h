#pragma once
/// The harness's own connection to PostgreSQL (never through the proxies): schema set-up, reset between
/// schedules and the final state. The broker's is its folder's (brokers/).
#include "history/history.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace idem {

/// A statement PostgreSQL cancelled at the connection's statement_timeout or lock_timeout (SQLSTATE 57014,
/// 55P03).
struct PgTimeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A PostgreSQL connection (libpqxx). Rows come back as text, SQL NULL as null.
class PgAdmin {
public:
  /// `timeout` > 0 bounds every statement and lock wait of this connection (statement_timeout,
  /// lock_timeout): the harness's own queries never wait past the run's deadline.
  explicit PgAdmin(const std::string& url, std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  ~PgAdmin();
  /// Bounds every later statement of this connection by `timeout` (statement_timeout, lock_timeout); a
  /// statement that runs longer throws PgTimeout.
  void setTimeout(std::chrono::milliseconds timeout);
  /// Runs one or more statements (simple protocol), no result.
  void exec(const std::string& sql);
  /// Runs one statement (simple protocol) and returns the rows it affected (a DELETE's count).
  int64_t execCount(const std::string& sql);
  /// SQL errors of exec, query and rows are one line: "message (SQLSTATE x) in: statement".
  /// Runs a query; rows as arrays of text/null.
  nlohmann::json query(const std::string& sql);
  /// Runs a query; rows of text columns, SQL NULL as nullopt; `columns`, when given, gets the number of
  /// columns of the result (known even when it has no rows); `types` the type of each column, as
  /// format_type names it ("bigint", "text").
  Rows rows(const std::string& sql, size_t* columns = nullptr, std::vector<std::string>* types = nullptr);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace idem
