/// The "sink" member of a consumer scenario: the external call its consumers make per event (docs/sink.md).
#include "scenario/json_fields.h"
#include "scenario/scenario_parse.h"

#include "core/error.h"

#include <fmt/format.h>

#include <cctype>

namespace idem::detail {

namespace {

bool headerName(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!(std::isalnum(c) || c == '-' || c == '_')) return false;
  return true;
}

int statusIn(const FieldReader& r, const std::string& key, int fallback, int lo, int hi, const char* range) {
  if (!r.has(key)) return fallback;
  auto v = *r.integer(key, true);
  if (v < lo || v > hi) r.fail(key, fmt::format("{} is not {}", v, range));
  return static_cast<int>(v);
}

} // namespace

SinkSpec parseSink(const nlohmann::json& j, const std::string& what, const Scenario& s) {
  if (!j.is_object()) fieldError(what, "sink", "must be an object (method, path, ref, key_header, policy, answer, booked, timeout_ms)");
  FieldReader r(j, what, "sink");
  r.onlyKnown({"method", "path", "ref", "key_header", "policy", "answer", "booked", "timeout_ms"});
  if (s.kind == "http") r.fail("method", "an HTTP scenario has no consumer to call a sink");
  SinkSpec k;
  if (r.has("method")) k.method = r.oneOf("method", {"POST", "PUT", "PATCH", "DELETE"});
  k.path = r.str("path", false).value_or(k.path);
  if (k.path.empty() || k.path[0] != '/' || k.path.find_first_of(" \r\n\t?#") != std::string::npos)
    r.fail("path", fmt::format("'{}' is not an absolute request path without a query (\"/charges\")", k.path));
  k.ref = r.str("ref", false).value_or(s.idField());
  k.keyHeader = r.str("key_header", false).value_or(k.keyHeader);
  if (!headerName(k.keyHeader)) r.fail("key_header", fmt::format("'{}' is not a header name", k.keyHeader));
  if (r.has("policy")) {
    FieldReader p(r.raw("policy"), what, "sink.policy");
    if (!r.raw("policy").is_object()) r.fail("policy", "must be an object (keys, mismatch)");
    p.onlyKnown({"keys", "mismatch"});
    if (p.has("keys")) k.honoursKeys = p.oneOf("keys", {"honour", "ignore"}) == "honour";
    k.mismatch = statusIn(p, "mismatch", k.mismatch, 400, 499, "a client error (400 to 499)");
  }
  if (r.has("answer")) {
    FieldReader a(r.raw("answer"), what, "sink.answer");
    if (!r.raw("answer").is_object()) r.fail("answer", "must be an object (status, body)");
    a.onlyKnown({"status", "body"});
    k.status = statusIn(a, "status", k.status, 200, 299, "a success (200 to 299)");
    if (a.has("body")) k.answer = a.raw("body");
  }
  k.booked = *r.text("booked", true);
  if (r.has("timeout_ms")) k.timeoutMs = statusIn(r, "timeout_ms", 0, 1, 600000, "from 1 to 600000 (ms)");
  return k;
}

} // namespace idem::detail
