#include "supervisor/admin.h"

#include "core/error.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
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
  exec(fmt::format("SET statement_timeout = {0}; SET lock_timeout = {0}", timeout.count()));
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

namespace {

nlohmann::json toJson(const redisReply* r, const std::string& where) {
  switch (r->type) {
  case REDIS_REPLY_STRING:
  case REDIS_REPLY_STATUS:
    return std::string(r->str, r->len);
  case REDIS_REPLY_INTEGER:
    return r->integer;
  case REDIS_REPLY_NIL:
    return nullptr;
  case REDIS_REPLY_ARRAY: {
    auto a = nlohmann::json::array();
    for (size_t i = 0; i < r->elements; ++i) a.push_back(toJson(r->element[i], where));
    return a;
  }
  case REDIS_REPLY_ERROR:
    throw std::runtime_error(fmt::format("{}: {}", where, std::string(r->str, r->len)));
  default:
    return nullptr;
  }
}

} // namespace

ValkeyAdmin::ValkeyAdmin(const std::string& host, int port, const std::string& password, int db)
    : where_(fmt::format("Valkey at {}:{}", host, port)) {
  struct timeval tv {5, 0};
  ctx_ = redisConnectWithTimeout(host.c_str(), port, tv);
  if (!ctx_ || ctx_->err) {
    std::string why = ctx_ ? ctx_->errstr : "out of memory";
    if (ctx_) redisFree(ctx_);
    ctx_ = nullptr;
    throw UsageError(fmt::format("cannot connect to {}: {}", where_, why));
  }
  redisSetTimeout(ctx_, tv);
  if (!password.empty()) command({"AUTH", password});
  if (db != 0) command({"SELECT", std::to_string(db)});
}

ValkeyAdmin::~ValkeyAdmin() {
  if (ctx_) redisFree(ctx_);
}

nlohmann::json ValkeyAdmin::command(const std::vector<std::string>& argv) {
  return pipeline({argv}).front();
}

std::vector<nlohmann::json> ValkeyAdmin::pipeline(const std::vector<std::vector<std::string>>& cmds) {
  for (const auto& argv : cmds) {
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    for (const auto& a : argv) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
    redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), ptrs.data(), lens.data());
  }
  std::vector<nlohmann::json> out;
  std::string firstError;
  for (size_t i = 0; i < cmds.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(ctx_, &raw) != REDIS_OK || !raw)
      throw std::runtime_error(fmt::format("{}: {}", where_, ctx_->errstr));
    auto* r = static_cast<redisReply*>(raw);
    try {
      out.push_back(toJson(r, where_));
    } catch (const std::exception& e) {
      if (firstError.empty()) firstError = e.what();
      out.push_back(nullptr);
    }
    freeReplyObject(r);
  }
  if (!firstError.empty()) throw std::runtime_error(firstError);
  return out;
}

} // namespace idem
