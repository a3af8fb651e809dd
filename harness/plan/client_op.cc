#include "plan/client_op.h"

#include "core/error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace idem {

namespace {

const std::vector<std::pair<ClientOp::Kind, const char*>> kKinds{
    {ClientOp::Kind::Send, "send"}, {ClientOp::Kind::Burst, "burst"}, {ClientOp::Kind::NoKey, "no-key"},
    {ClientOp::Kind::BadKey, "bad-key"}};
const std::vector<std::pair<ClientOp::Wait, const char*>> kWaits{
    {ClientOp::Wait::Answer, "answer"},
    {ClientOp::Wait::Timeout, "timeout"},
    {ClientOp::Wait::CutRequest, "cut-after-request"},
    {ClientOp::Wait::CutHeaders, "cut-after-headers"},
    {ClientOp::Wait::CutBody, "cut-mid-body"}};
const std::set<std::string> kMalformed{"empty", "token", "unterminated"};

} // namespace

const char* toString(ClientOp::Kind k) {
  for (const auto& [x, s] : kKinds)
    if (x == k) return s;
  return "?";
}

const char* toString(ClientOp::Wait w) {
  for (const auto& [x, s] : kWaits)
    if (x == w) return s;
  return "?";
}

bool ClientOp::operator==(const ClientOp& o) const {
  return kind == o.kind && wait == o.wait && key == o.key && body == o.body && copies == o.copies && other == o.other &&
         malformed == o.malformed && afterRetention == o.afterRetention && agedMs == o.agedMs && reordered == o.reordered &&
         replica == o.replica && split == o.split;
}

std::string ClientOp::str() const {
  std::string s = plain();
  if (replica) s += fmt::format(" to s{}", replica);
  if (split) s += " split";
  return s;
}

int ClientOp::replicaOf(int copy, int replicas) const {
  replicas = std::max(1, replicas);
  const int first = std::max(1, replica) - 1;
  return (split ? first + copy - 1 : first) % replicas + 1;
}

std::string ClientOp::plain() const {
  switch (kind) {
  case Kind::Send: {
    std::string s = key == body ? fmt::format("send {}", key) : fmt::format("send key {} body {}", key, body);
    if (afterRetention) s += " (after retention)";
    if (agedMs) s += fmt::format(" (aged {} ms)", agedMs);
    if (reordered) s += " (reordered)";
    return wait == Wait::Answer ? s : fmt::format("{} ({})", s, toString(wait));
  }
  case Kind::Burst:
    return fmt::format("burst {} of {}{}", copies, key, other ? fmt::format(" +{}", other) : "");
  case Kind::NoKey: return fmt::format("no-key {}", body);
  case Kind::BadKey: return fmt::format("bad-key {} ({})", body, malformed);
  }
  return "?";
}

void to_json(nlohmann::json& j, const ClientOp& op) {
  j = {{"op", toString(op.kind)}};
  if (op.kind == ClientOp::Kind::Send || op.kind == ClientOp::Kind::Burst) j["key"] = op.key;
  if (op.kind != ClientOp::Kind::Burst) j["body"] = op.body;
  if (op.kind == ClientOp::Kind::Send && op.wait != ClientOp::Wait::Answer) j["wait"] = toString(op.wait);
  if (op.afterRetention) j["after_retention"] = true;
  if (op.agedMs) j["aged_ms"] = op.agedMs;
  if (op.reordered) j["reordered"] = true;
  if (op.kind == ClientOp::Kind::Burst) {
    j["copies"] = op.copies;
    if (op.other) j["other"] = op.other;
  }
  if (op.kind == ClientOp::Kind::BadKey) j["malformed"] = op.malformed;
  if (op.replica) j["replica"] = op.replica;
  if (op.split) j["split"] = true;
}

ClientOp clientOpFromJson(const nlohmann::json& j, const std::string& what, const std::string& field) {
  auto bad = [&](const std::string& member, const std::string& why) {
    return UsageError(fmt::format("{}: field '{}{}': {}", what, field, member.empty() ? "" : "." + member, why));
  };
  if (!j.is_object()) throw bad("", "must be an object like {\"op\": \"send\", \"key\": 1}");
  static const std::set<std::string> known{"op", "key", "body", "wait", "copies", "other", "malformed", "after_retention",
                                           "aged_ms", "reordered", "replica", "split"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known.count(it.key())) throw bad(it.key(), "unknown field (known: op, key, body, wait, copies, other, malformed, after_retention, "
                                       "aged_ms, reordered, replica, split)");
  auto whole = [&](const char* m, int lo, int hi) {
    const auto& v = j.at(m);
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      throw bad(m, fmt::format("{} is not a whole number from {} to {}", v.dump(), lo, hi));
    return static_cast<int>(v.get<int64_t>());
  };
  ClientOp op;
  if (!j.contains("op") || !j["op"].is_string()) throw bad("op", "is required: send, burst, no-key or bad-key");
  const std::string kind = j["op"].get<std::string>();
  bool found = false;
  for (const auto& [k, s] : kKinds)
    if (kind == s) op.kind = k, found = true;
  if (!found) throw bad("op", fmt::format("'{}' is not one of send, burst, no-key, bad-key", kind));
  const bool keyed = op.kind == ClientOp::Kind::Send || op.kind == ClientOp::Kind::Burst;
  if (keyed) {
    if (!j.contains("key")) throw bad("key", "is required (the event whose Idempotency-Key is sent)");
    op.key = op.body = whole("key", 1, 1000000);
  } else if (j.contains("key")) {
    throw bad("key", fmt::format("a {} request sends no key", kind));
  } else {
    op.key = 0;
  }
  if (j.contains("body")) {
    if (op.kind == ClientOp::Kind::Burst) throw bad("body", "a burst sends the key's own payload; use \"other\"");
    op.body = whole("body", 1, 1000000);
  } else if (!keyed) {
    throw bad("body", "is required (the event whose payload is sent)");
  }
  if (j.contains("wait")) {
    if (op.kind != ClientOp::Kind::Send) throw bad("wait", "only a send waits, times out or cuts");
    const auto& w = j["wait"];
    bool ok = false;
    for (const auto& [x, s] : kWaits)
      if (w.is_string() && w.get<std::string>() == s) op.wait = x, ok = true;
    if (!ok) throw bad("wait", "must be one of answer, timeout, cut-after-request, cut-after-headers, cut-mid-body");
  }
  if (op.kind == ClientOp::Kind::Burst) {
    op.copies = j.contains("copies") ? whole("copies", 2, kMaxBurst) : 2;
    if (j.contains("other")) op.other = whole("other", 1, 1000000);
    if (op.other == op.key)
      throw bad("other", fmt::format("{} is the burst's own key: \"other\" names another event, whose payload the "
                                     "last copy carries", op.other));
  } else if (j.contains("copies") || j.contains("other")) {
    throw bad(j.contains("copies") ? "copies" : "other", "only a burst has copies");
  }
  if (j.contains("after_retention")) {
    if (op.kind != ClientOp::Kind::Send) throw bad("after_retention", "only a send waits out the retention");
    if (!j["after_retention"].is_boolean()) throw bad("after_retention", "must be true or false");
    op.afterRetention = j["after_retention"].get<bool>();
  }
  if (j.contains("aged_ms")) {
    if (op.kind != ClientOp::Kind::Send) throw bad("aged_ms", "only a send waits before it is written");
    if (op.afterRetention) throw bad("aged_ms", "after_retention already waits out the retention");
    op.agedMs = whole("aged_ms", 1, static_cast<int>(kMaxRetentionWaitMs));
  }
  if (j.contains("reordered")) {
    if (op.kind != ClientOp::Kind::Send) throw bad("reordered", "only a send reorders its payload's fields");
    if (!j["reordered"].is_boolean()) throw bad("reordered", "must be true or false");
    op.reordered = j["reordered"].get<bool>();
  }
  if (j.contains("replica")) op.replica = whole("replica", 1, kMaxReplicas);
  if (j.contains("split")) {
    if (op.kind != ClientOp::Kind::Burst) throw bad("split", "only a burst's copies are split across the replicas");
    if (!j["split"].is_boolean()) throw bad("split", "must be true or false");
    op.split = j["split"].get<bool>();
  }
  if (j.contains("malformed")) {
    if (op.kind != ClientOp::Kind::BadKey) throw bad("malformed", "only a bad-key request has a malformed key");
    if (!j["malformed"].is_string() || !kMalformed.count(j["malformed"].get<std::string>()))
      throw bad("malformed", "must be one of empty, token, unterminated");
    op.malformed = j["malformed"].get<std::string>();
  }
  return op;
}

} // namespace idem
