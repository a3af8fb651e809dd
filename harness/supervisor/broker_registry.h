#pragma once
/// The brokers the harness runs consumers on, by the name a target's manifest gives ("broker"). The one
/// place that names them: adding a broker is a folder under brokers/ and a line here.
#include "brokers/broker.h"
#include "servers/servers.h"
#include "target/manifest.h"

#include <string>

namespace idem {

/// The broker of `target` for one workspace: on Valkey, the stream `stream` of `servers`; on Kafka, an
/// embedded broker of its own; on NATS, an embedded nats-server of its own. Throws UsageError when it can't
/// start. `claimIdleMs`: --claim-idle-ms (NATS: the durable's AckWait).
brokers::BrokerPtr makeBroker(const ServerEndpoints& servers, const Target& target, const std::string& stream,
                              int claimIdleMs);

/// Whether broker `broker` has `feature` (FaultKind::brokerFeature: "rebalance").
bool brokerHas(const std::string& broker, const std::string& feature);

/// Throws UsageError "<what>: ..." when fault kind `kind` needs a feature the broker of `target` has not.
void requireKindOnBroker(const std::string& kind, const Target& target, const std::string& what);

} // namespace idem
