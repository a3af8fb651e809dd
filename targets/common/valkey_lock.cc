#include "valkey_lock.h"

#include "orders.h"
#include "valkey.h"

#include <pqxx/pqxx>

#include <cstdlib>
#include <random>
#include <stdexcept>

namespace idem::targets::http {

namespace {

const long long kLeaseMs = envInt("IDEMPOTENCY_LEASE_MS", 2000);

/// Deletes the lock only while it still holds this request's token: a lock another request took after the
/// lease ran out is not this request's to delete.
constexpr const char* kRelease =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

std::string valkeyUrl() {
  const char* url = std::getenv("VALKEY_URL");
  if (url == nullptr || *url == '\0') throw std::runtime_error("VALKEY_URL is not set");
  return url;
}

std::string randomToken() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::to_string(rng());
}

/// The key's stored answer (its first key row), if any.
std::optional<pqxx::row> stored(pqxx::transaction_base& tx, const std::string& key) {
  pqxx::result r = tx.exec_params(
      "SELECT request_hash, status, location, body FROM idempotency_keys WHERE key = $1 ORDER BY id LIMIT 1", key);
  if (r.empty()) return std::nullopt;
  return r[0];
}

Response replayOr422(const pqxx::row& row, const Order& order) {
  return row["request_hash"].as<std::string>() == order.hash ? storedResponse(row) : keyReused(422);
}

/// Whether the token claims the key's fence row: it is written with the token unless a larger token holds it.
/// The row stays locked until the transaction ends, so the requests of one key that reach this point run
/// their transactions one after the other, and each sees what the one before it committed.
bool claimFence(pqxx::transaction_base& tx, const std::string& key, long long token) {
  pqxx::result r = tx.exec_params("INSERT INTO key_fences(key, fence) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE "
                                  "SET fence = EXCLUDED.fence WHERE key_fences.fence < EXCLUDED.fence RETURNING fence",
                                  key, token);
  return !r.empty();
}

/// The transaction of a request that holds the lock: its answer.
Response execute(pqxx::connection& c, const std::string& key, const Order& order, Fencing fencing, long long token) {
  pqxx::work tx(c);
  if (fencing == Fencing::Token && !claimFence(tx, key, token)) {
    // A newer holder took the key after this request's lease ran out: this one must not execute. What that
    // holder committed is the key's answer; while it still runs, the key is in flight.
    tx.abort();
    pqxx::nontransaction look(c);
    auto row = stored(look, key);
    return row ? replayOr422(*row, order) : inProgress();
  }
  if (auto row = stored(tx, key)) {
    Response res = replayOr422(*row, order);
    tx.commit();
    return res;
  }
  Response res = executeOrder(tx, order);
  tx.exec_params("INSERT INTO idempotency_keys(key, request_hash, status, location, body) VALUES ($1, $2, $3, $4, $5)",
                 key, order.hash, res.status, res.location, res.body);
  tx.commit();
  return res;
}

} // namespace

Response valkeyLockedOrder(const Request& req, Db& db, Fencing fencing) {
  auto key = sfStringKey(req);
  if (!key) return missingKey();
  auto order = parseOrder(req);
  if (!order) return invalidBody();
  pqxx::connection& c = db.conn();
  {
    pqxx::nontransaction look(c);
    if (auto row = stored(look, *key)) return replayOr422(*row, *order);
  }
  Valkey valkey(valkeyUrl());
  const std::string lock = "lock:" + *key;
  long long fence = 0;
  std::string token;
  if (fencing == Fencing::Token) {
    ReplyPtr n = valkey.command({"INCR", "fence:" + *key});
    fence = n->integer;
    token = std::to_string(fence);
  } else {
    token = randomToken();
  }
  ReplyPtr taken = valkey.command({"SET", lock, token, "NX", "PX", std::to_string(kLeaseMs)});
  if (taken->type == REDIS_REPLY_NIL) return inProgress();
  Response res;
  try {
    res = execute(c, *key, *order, fencing, fence);
  } catch (...) {
    try {
      valkey.command({"EVAL", kRelease, "1", lock, token});
    } catch (const std::exception&) {
      // the lease ends it
    }
    throw;
  }
  try {
    valkey.command({"EVAL", kRelease, "1", lock, token});
  } catch (const std::exception&) {
    // the answer is committed; the lease ends the lock
  }
  return res;
}

} // namespace idem::targets::http
