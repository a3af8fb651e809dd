#include "supervisor/admin.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <pqxx/pqxx>

namespace idem {

struct PgAdmin::Impl {
  explicit Impl(const std::string& url) : conn(url) {}
  pqxx::connection conn;
};

PgAdmin::PgAdmin(const std::string& url, std::chrono::milliseconds timeout) {
  try {
    impl_ = std::make_unique<Impl>(url);
    if (timeout.count() > 0) setTimeout(timeout);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    throw UsageError(fmt::format("cannot connect to PostgreSQL: {}", msg));
  }
}

PgAdmin::~PgAdmin() = default;

void PgAdmin::setTimeout(std::chrono::milliseconds timeout) {
  // PostgreSQL takes at most INT_MAX ms (24.8 days); a longer --deadline is no limit to it either.
  const int64_t ms = std::min<int64_t>(timeout.count(), std::numeric_limits<int32_t>::max());
  exec(fmt::format("SET statement_timeout = {0}; SET lock_timeout = {0}", ms));
}

namespace {

/// One line for a PostgreSQL error: the message, its SQLSTATE and the statement (abbreviated), without
/// the "LINE 1:" and caret lines libpq adds.
std::string oneLine(const pqxx::sql_error& e) {
  std::string msg = e.what();
  if (msg.rfind("ERROR:", 0) == 0) msg = msg.substr(6);
  msg = msg.substr(0, msg.find('\n'));
  while (!msg.empty() && msg.front() == ' ') msg.erase(0, 1);
  std::string stmt;
  for (char c : e.query()) {
    if (stmt.size() >= 120) {
      stmt += "...";
      break;
    }
    char d = (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    if (d == ' ' && (stmt.empty() || stmt.back() == ' ')) continue;
    stmt += d;
  }
  return fmt::format("{} (SQLSTATE {}) in: {}", msg, e.sqlstate().empty() ? "?" : e.sqlstate(), stmt);
}

/// Runs `sql` in a nontransaction; an SQL error becomes a one-line std::runtime_error.
pqxx::result run(pqxx::connection& conn, const std::string& sql) {
  try {
    pqxx::nontransaction tx(conn);
    return tx.exec(sql);
  } catch (const pqxx::sql_error& e) {
    if (e.sqlstate() == "57014" || e.sqlstate() == "55P03") throw PgTimeout(oneLine(e)); // statement, lock timeout
    throw std::runtime_error(oneLine(e));
  }
}

} // namespace

void PgAdmin::exec(const std::string& sql) { run(impl_->conn, sql); }

int64_t PgAdmin::execCount(const std::string& sql) { return run(impl_->conn, sql).affected_rows(); }

nlohmann::json PgAdmin::query(const std::string& sql) {
  pqxx::result r = run(impl_->conn, sql);
  auto rows = nlohmann::json::array();
  for (const auto& row : r) {
    auto cols = nlohmann::json::array();
    for (const auto& field : row) {
      if (field.is_null()) cols.push_back(nullptr);
      else cols.push_back(field.c_str());
    }
    rows.push_back(std::move(cols));
  }
  return rows;
}

Rows PgAdmin::rows(const std::string& sql, size_t* columns, std::vector<std::string>* types) {
  pqxx::result r = run(impl_->conn, sql);
  if (columns) *columns = static_cast<size_t>(r.columns());
  if (types) {
    types->clear();
    for (pqxx::row::size_type c = 0; c < r.columns(); ++c)
      types->push_back(run(impl_->conn, fmt::format("SELECT format_type({}, NULL)", r.column_type(c)))[0][0].c_str());
  }
  Rows out;
  for (const auto& row : r) {
    Row cols;
    for (const auto& field : row) cols.push_back(field.is_null() ? std::nullopt : std::optional<std::string>(field.c_str()));
    out.push_back(std::move(cols));
  }
  return out;
}

} // namespace idem
