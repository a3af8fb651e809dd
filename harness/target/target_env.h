#pragma once
/// The variables idemproof sets in a target process's environment, in one list. They carry the contract
/// (where the servers are, which stream, group and port) and the marks by which idemproof finds every
/// process a target starts (supervisor/escapes.h, core/owner.h): a manifest that could set one could
/// point a consumer past the proxies or hide what it leaves running. So a manifest's "env" may set none
/// of them, nor a variable of the dynamic loader (LD_*), which would change every program the target runs.
/// The supervisor sets a target's variables only through names of this list (Workspace::targetSpec
/// refuses any other), so a variable idemproof starts to set is reserved by construction.
#include "core/owner.h"

#include <string>
#include <vector>

namespace idem {

/// The marks of a target process: its run (unique over idemproof's life) and its process label.
inline constexpr const char* kRunEnv = "IDEMPROOF_RUN";
inline constexpr const char* kProcessEnv = "IDEMPROOF_PROCESS";

/// Every variable idemproof sets for a target process (consumers and HTTP servers alike).
inline const std::vector<std::string>& reservedEnv() {
  static const std::vector<std::string> names = {
      kOwnerEnv, kTempRootEnv, kRunEnv, kProcessEnv,                 // marks
      "DATABASE_URL", "VALKEY_URL", "REDIS_URL", "PGGSSENCMODE", "SINK_URL",     // the servers, through the proxies
      "KAFKA_BOOTSTRAP",                                             // a Kafka broker, through its proxy
      "NATS_URL", "NATS_TOKEN", "NATS_USER", "NATS_PASSWORD",        // a NATS server, through its proxy
      "SUBJECT", "DURABLE",                                          // its stream's subject and durable
      "AMQP_URL", "QUEUE",                                           // RabbitMQ, through its proxy; its queue
      "STREAM", "TOPIC", "GROUP", "CONSUMER", "CLAIM_IDLE_MS",       // a consumer (docs/target-contract.md)
      "DEDUP_TTL_MS",                                                // its declared dedup retention
      "PORT", "IDEMPOTENCY_LEASE_MS", "IDEMPOTENCY_PAYLOAD_EQUIVALENCE", // an HTTP target (docs/http-contract.md)
      "DEAD_LETTER_STREAM", "DEAD_LETTER_QUEUE", "DEAD_LETTER_TOPIC", "DEAD_LETTER_TABLE", // poison events
      "MAX_DELIVERIES"};                                             // (docs/scenarios.md)
  return names;
}

/// Whether a manifest must not set `name`: one of reservedEnv(), or the dynamic loader's (LD_*).
inline bool isReservedEnv(const std::string& name) {
  if (name.rfind("LD_", 0) == 0) return true;
  for (const auto& r : reservedEnv())
    if (r == name) return true;
  return false;
}

} // namespace idem
