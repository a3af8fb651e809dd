/// The "http" member of an HTTP scenario (kind "http"): docs/http-contract.md and docs/scenarios.md.
#include "scenario/json_fields.h"
#include "scenario/scenario_parse.h"

#include "core/error.h"

#include <fmt/format.h>

#include <cctype>
#include <set>

namespace idem::detail {

namespace {

/// A status of the policy, within [lo, hi]: `range` says which answers those are ("a success (2xx)").
int status(const FieldReader& r, const std::string& key, int fallback, int lo, int hi, const char* range) {
  if (!r.has(key)) return fallback;
  auto v = *r.integer(key, true);
  if (v < 100 || v > 599) r.fail(key, fmt::format("{} is not an HTTP status (100 to 599)", v));
  if (v < lo || v > hi) r.fail(key, fmt::format("{} is not {}: the checkers could not tell it from other answers", v, range));
  return static_cast<int>(v);
}

/// Headers the client itself writes or that govern the connection (RFC 9110, 9112): a key sent in one of
/// them would break the request, or be overwritten.
const std::set<std::string> kClientHeaders{"host", "content-length", "content-type", "transfer-encoding", "connection",
                                           "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "expect"};

} // namespace

HttpSpec parseHttpSpec(const nlohmann::json& j, const std::string& what, const Scenario& s) {
  FieldReader r(j, what, "http");
  r.onlyKnown({"method", "path", "key_header", "key_format", "body", "numbers", "effects", "ledger", "policy"});
  HttpSpec h;
  if (r.has("method")) h.method = r.oneOf("method", {"POST", "PUT", "PATCH", "DELETE"});
  h.path = r.str("path", false).value_or(h.path);
  if (h.path.empty() || h.path[0] != '/' || h.path.find_first_of(" \r\n\t") != std::string::npos)
    r.fail("path", fmt::format("'{}' is not an absolute request path (\"/orders\")", h.path));
  h.keyHeader = r.str("key_header", false).value_or(h.keyHeader);
  for (unsigned char c : h.keyHeader)
    if (!(std::isalnum(c) || c == '-' || c == '_')) r.fail("key_header", fmt::format("'{}' is not a header name", h.keyHeader));
  if (h.keyHeader.empty()) r.fail("key_header", "must name a header");
  std::string lower;
  for (unsigned char c : h.keyHeader) lower += static_cast<char>(std::tolower(c));
  if (kClientHeaders.count(lower))
    r.fail("key_header", fmt::format("'{}' is a header the client itself writes or that governs the connection; name "
                                     "the endpoint's own key header (\"Idempotency-Key\")", h.keyHeader));
  if (r.has("key_format")) h.keyFormat = r.oneOf("key_format", {"sf-string", "opaque"});
  if (r.has("body")) h.body = r.oneOf("body", {"json", "form"});
  h.policy.payloadEquivalence = h.body;
  h.numbers = r.strings("numbers", false, true).value_or(std::vector<std::string>{});
  for (size_t i = 0; i < h.numbers.size(); ++i) {
    const FieldGen* f = s.fieldGen(h.numbers[i]);
    if (!f) r.fail(fmt::format("numbers[{}]", i), fmt::format("'{}' is not a field (fields: {})", h.numbers[i], fieldNames(s.fields)));
    if (!integerValued(*f, s.keys))
      r.fail(fmt::format("numbers[{}]", i), fmt::format("'{}' is not integer-valued (gen {})", h.numbers[i], f->gen));
  }
  bool uuid = false;
  for (const auto& f : s.fields) uuid = uuid || f.gen == "uuid";
  if (!uuid) fieldError(what, "fields", "an HTTP scenario needs one uuid field: the payload's reference (ref) its effects are counted by");
  h.effects = *r.text("effects", true);
  if (r.has("ledger")) {
    FieldReader l(r.raw("ledger"), what, "http.ledger");
    l.onlyKnown({"observed", "key", "field", "sign"});
    HttpSpec::Ledger led;
    led.observed = *l.text("observed", true);
    led.key = *l.str("key", true);
    led.field = *l.str("field", true);
    for (const auto& name : {led.key, led.field})
      if (!s.fieldGen(name)) l.fail(name == led.key ? "key" : "field", fmt::format("'{}' is not a field (fields: {})", name, fieldNames(s.fields)));
    if (!integerValued(*s.fieldGen(led.field), s.keys)) l.fail("field", fmt::format("'{}' is not integer-valued", led.field));
    if (l.has("sign")) {
      auto sign = *l.integer("sign", true);
      if (sign != 1 && sign != -1) l.fail("sign", "must be 1 or -1");
      led.sign = static_cast<int>(sign);
    }
    h.ledger = led;
  }
  if (r.has("policy")) {
    FieldReader p(r.raw("policy"), what, "http.policy");
    p.onlyKnown({"created", "mismatch", "in_flight", "missing_key", "replay_5xx", "lease_ms", "retention_ms",
                 "replay_equivalence", "payload_equivalence"});
    auto& pol = h.policy;
    pol.created = status(p, "created", pol.created, 200, 299, "a success (2xx)");
    pol.mismatch = status(p, "mismatch", pol.mismatch, 400, 499, "a client error (4xx)");
    pol.missingKey = status(p, "missing_key", pol.missingKey, 400, 499, "a client error (4xx)");
    if (p.has("in_flight")) {
      const auto& v = p.raw("in_flight");
      if (v.is_string() && v.get<std::string>() == "wait") pol.inFlight = 0;
      else if (v.is_number_integer()) pol.inFlight = status(p, "in_flight", 409, 400, 599, "an error (4xx or 5xx)");
      else p.fail("in_flight", "must be a status (409) or \"wait\"");
    }
    // The in-flight status is the one answer that means "ask again": shared with another, the checkers
    // could not tell a rejection from a retry to come.
    if (pol.inFlight != 0 && pol.inFlight == pol.mismatch)
      p.fail("in_flight", fmt::format("{} is also the mismatch status: the checkers could not tell a key reused with "
                                      "another payload from one still in flight", pol.inFlight));
    if (pol.inFlight != 0 && pol.inFlight == pol.missingKey)
      p.fail("in_flight", fmt::format("{} is also the missing_key status: the checkers could not tell a malformed key "
                                      "from one still in flight", pol.inFlight));
    if (p.has("replay_equivalence")) pol.replayEquivalence = p.oneOf("replay_equivalence", {"bytes", "json"});
    if (p.has("payload_equivalence")) {
      pol.payloadEquivalence = p.oneOf("payload_equivalence", {"bytes", "json", "form"});
      // A form body is no JSON value and a JSON body no set of pairs: the server could not compare so.
      if (pol.payloadEquivalence != "bytes" && pol.payloadEquivalence != h.body)
        p.fail("payload_equivalence", fmt::format("\"{}\" can't compare {} bodies (http.body): use \"{}\" or \"bytes\"",
                                                  pol.payloadEquivalence, h.body, h.body));
    }
    if (p.has("replay_5xx")) {
      if (!p.raw("replay_5xx").is_boolean()) p.fail("replay_5xx", "must be true or false");
      pol.replay5xx = p.raw("replay_5xx").get<bool>();
    }
    if (p.has("lease_ms")) {
      auto v = *p.integer("lease_ms", true);
      if (v < 1 || v > 600000) p.fail("lease_ms", fmt::format("{} is not from 1 to 600000 (ms)", v));
      pol.leaseMs = static_cast<int>(v);
    }
    if (p.has("retention_ms")) {
      auto v = *p.integer("retention_ms", true);
      if (v < 1) p.fail("retention_ms", "must be at least 1 (ms)");
      pol.retentionMs = v;
    }
  }
  return h;
}

} // namespace idem::detail

namespace idem {

void checkClientOps(const Scenario& s, const std::vector<ClientOp>& client, const std::string& what,
                    const std::string& field) {
  if (!s.http) return;
  for (size_t i = 0; i < client.size(); ++i)
    if (client[i].afterRetention && s.http->policy.retentionMs > kMaxRetentionWaitMs)
      detail::fieldError(what, fmt::format("{}[{}].after_retention", field, i),
                         fmt::format("the client would wait out scenario {}'s retention_ms of {} ms, longer than the {} ms "
                                     "it waits; use a scenario that declares a shorter http.policy.retention_ms",
                                     s.name, s.http->policy.retentionMs, kMaxRetentionWaitMs));
}

} // namespace idem
