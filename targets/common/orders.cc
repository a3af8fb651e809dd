#include "orders.h"
#include "form.h"

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstdint>
#include <cstdio>

namespace idem::targets::http {
namespace {

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

std::optional<Order> parseOrder(std::string_view body, std::string_view contentType, std::string_view equivalence) {
  std::string_view type = contentType.substr(0, contentType.find(';'));
  while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
  const bool form = type == "application/x-www-form-urlencoded";
  std::optional<Order> o;
  if (!form) {
    o = parseOrder(body);
  } else if (auto pairs = parseForm(body)) {
    // The form's pairs as the JSON object the fields make: every value a string but the integers. A name
    // sent twice is no order.
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [name, value] : *pairs) {
      if (j.contains(name)) return std::nullopt;
      j[name] = value;
    }
    for (const char* n : {"qty", "amount"}) {
      auto it = j.find(n);
      if (it == j.end()) return std::nullopt;
      const std::string text = it->get<std::string>();
      char* end = nullptr;
      errno = 0;
      long long v = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || errno != 0) return std::nullopt;
      *it = v;
    }
    o.emplace();
    if (!stringField(j, "ref", o->ref) || !stringField(j, "customer", o->customer) || !stringField(j, "sku", o->sku) ||
        !integerField(j, "qty", o->qty) || !integerField(j, "amount", o->amount))
      return std::nullopt;
    o->hash = fnv1a64(canonicalForm(*pairs));
  }
  if (o && equivalence == "bytes") o->hash = fnv1a64(body);
  return o;
}

std::optional<Order> parseOrder(const Request& req) {
  auto types = req.values("Content-Type");
  const char* eq = std::getenv("IDEMPOTENCY_PAYLOAD_EQUIVALENCE");
  return parseOrder(req.body, types.size() == 1 ? types.front() : std::string_view("application/json"),
                    eq ? std::string_view(eq) : std::string_view());
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
