#pragma once
/// The `orders` scenario as the reference HTTP targets share it (scenarios/orders.json,
/// docs/http-contract.md): the request body, its canonical hash, the one effect of an executed request,
/// and the JSON answers. The targets differ only in how they guard that effect with the key.
#include "http_server.h"

#include <pqxx/types> // forward declarations of transaction_base, row

#include <optional>
#include <string>
#include <string_view>


namespace idem::targets::http {

/// A POST /orders body: {"ref","customer","sku"} strings, {"qty","amount"} integers (more fields are
/// allowed and count in the hash).
struct Order {
  std::string ref, customer, sku;
  long long qty = 0, amount = 0;
  /// FNV-1a 64 (16 hex digits) of the body's canonical form: nlohmann::json's dump() of the parsed
  /// object, whose keys come out sorted and whose spacing is fixed, so reordered or re-spaced retries of
  /// one payload hash alike and any change of a value does not.
  std::string hash;
};

/// nullopt on a body that is no JSON object, or lacks a field, or has one of the wrong type.
std::optional<Order> parseOrder(std::string_view body);

/// A body of either kind: application/x-www-form-urlencoded (the same fields as name=value pairs, qty and
/// amount as decimal integers, no name twice) or else JSON. Its hash per the declared payload_equivalence:
/// "bytes" the body byte for byte; otherwise the body's canonical form (JSON: the dump of the parsed object;
/// form: the pairs sorted, form.h), so a retry with its fields reordered hashes alike.
std::optional<Order> parseOrder(std::string_view body, std::string_view contentType, std::string_view equivalence);

/// parseOrder of a request: its Content-Type, and the equivalence idemproof declares in
/// IDEMPOTENCY_PAYLOAD_EQUIVALENCE (unset: by the body's kind).
std::optional<Order> parseOrder(const Request& req);

/// The effect of one executed request, inside the caller's transaction `tx` (the caller commits):
///   INSERT INTO orders(ref, customer, sku, qty, amount) VALUES (...) RETURNING id
///   UPDATE stock SET qty = qty - $qty WHERE sku = $sku
/// and the 201 answer: Location /orders/<id>, body
/// {"id":<id>,"ref":"…","customer":"…","sku":"…","qty":N,"amount":N,"status":"created"}, built once so
/// that a target stores it and replays it byte for byte.
Response executeOrder(pqxx::transaction_base& tx, const Order& o);

/// The answer stored in a key row: its columns `status`, `location` (NULL: none) and `body`, to replay
/// exactly as first sent.
Response storedResponse(const pqxx::row& row);

/// {"error":"<message>"} with `status` (message is plain ASCII here, no escaping needed).
Response errorResponse(int status, std::string_view message);

// The error answers the reference servers share: a status and a fixed message.
inline Response missingKey() { return errorResponse(400, "Idempotency-Key required"); }
inline Response invalidBody() { return errorResponse(400, "invalid body"); }
inline Response inProgress() { return errorResponse(409, "request in progress"); }
inline Response keyReused(int status = 422) {
  return errorResponse(status, "idempotency key reused with a different payload");
}

} // namespace idem::targets::http
