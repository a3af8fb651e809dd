#include "orders.h"

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include <climits>
#include <cstdint>
#include <cstdio>

namespace idem::targets::http {
namespace {

/// FNV-1a 64: a stable hash (std::hash is not promised to be stable across builds, and a key row may
/// outlive the binary that wrote it). A collision would only make two payloads of one key look alike.
std::string fnv1a64(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

bool stringField(const nlohmann::json& j, const char* name, std::string& out) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_string()) return false;
  out = it->get<std::string>();
  // libpq sends text parameters as C strings: a NUL would silently cut the value short.
  return out.find('\0') == std::string::npos;
}

bool integerField(const nlohmann::json& j, const char* name, long long& out) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_number_integer()) return false; // 3.0 or "3" is no integer
  if (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(LLONG_MAX))
    return false;
  out = it->get<long long>();
  return true;
}

} // namespace

std::optional<Order> parseOrder(std::string_view body) {
  // allow_exceptions = false: a body that is no JSON comes back "discarded" instead of throwing.
  nlohmann::json j = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  Order o;
  if (!stringField(j, "ref", o.ref) || !stringField(j, "customer", o.customer) ||
      !stringField(j, "sku", o.sku) || !integerField(j, "qty", o.qty) || !integerField(j, "amount", o.amount))
    return std::nullopt;
  o.hash = fnv1a64(j.dump()); // nlohmann::json keeps object keys sorted: the dump is canonical
  return o;
}

Response executeOrder(pqxx::transaction_base& tx, const Order& o) {
  pqxx::result r = tx.exec_params(
      "INSERT INTO orders(ref, customer, sku, qty, amount) VALUES ($1, $2, $3, $4, $5) RETURNING id", o.ref,
      o.customer, o.sku, o.qty, o.amount);
  long long id = r[0][0].as<long long>();
  tx.exec_params("UPDATE stock SET qty = qty - $1 WHERE sku = $2", o.qty, o.sku);
  // ordered_json: the fields in the contract's order, not sorted. Built once; the targets that store it
  // replay this very string.
  nlohmann::ordered_json b;
  b["id"] = id;
  b["ref"] = o.ref;
  b["customer"] = o.customer;
  b["sku"] = o.sku;
  b["qty"] = o.qty;
  b["amount"] = o.amount;
  b["status"] = "created";
  return {201, b.dump(), "/orders/" + std::to_string(id)};
}

Response storedResponse(const pqxx::row& row) {
  Response res;
  res.status = row["status"].as<int>();
  res.location = row["location"].is_null() ? std::string() : row["location"].as<std::string>();
  res.body = row["body"].as<std::string>();
  return res;
}

Response errorResponse(int status, std::string_view message) {
  return {status, "{\"error\":\"" + std::string(message) + "\"}", ""};
}

} // namespace idem::targets::http
