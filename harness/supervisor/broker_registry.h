#pragma once
/// The brokers the harness runs consumers on, by the name a target's manifest gives ("broker"). The one
/// place that names them: adding a broker is a folder under brokers/ and an entry of the table in
/// broker_registry.cc.
#include "brokers/broker.h"
#include "plan/fault.h"
#include "servers/servers.h"
#include "target/manifest.h"

#include <string>

namespace idem {

/// The broker of `target` for one workspace: on Valkey, the stream `stream` of `servers`; on Kafka, an
/// embedded broker of its own; on NATS, an embedded nats-server of its own; on RabbitMQ, a vhost of the
/// command's node; on a broker `servers.broker_urls` names, the user's, with names carrying `tag` (a word
/// unique to the workspace among every idemproof sharing it). Throws UsageError when it can't start.
/// `claimIdleMs`: --claim-idle-ms (NATS: the durable's AckWait).
brokers::BrokerPtr makeBroker(const ServerEndpoints& servers, const Target& target, const std::string& stream,
                              const std::string& tag, int claimIdleMs);

/// The flag that names the user's broker `broker` instead of an embedded one ("--amqp-url"), or "" when
/// there is none.
std::string brokerUrlFlag(const std::string& broker);

/// Throws UsageError "<flag>: ..." when `url` is no URL of broker `broker`.
void checkBrokerUrl(const std::string& broker, const std::string& url);

/// Whether broker `broker` has `feature` (FaultKind::brokerFeature: "rebalance").
bool brokerHas(const std::string& broker, const std::string& feature);

/// Whether a run on broker `broker` mostly waits on the broker's own timers (a consumer group's joins), so
/// that runs of it are best run many at once, beside the others.
bool brokerRunsMostlyWait(const std::string& broker);

/// The broker's name for people ("Kafka"), `broker` itself when it is none of the registered ones.
std::string brokerTitle(const std::string& broker);

/// Throws UsageError "<what>: ..." when fault kind `kind` needs a feature the broker of `target` has not.
void requireKindOnBroker(const std::string& kind, const Target& target, const std::string& what);

/// requireKindOnBroker for `fault`'s kind, and a restart's server one the target's runs have: PostgreSQL,
/// Valkey, or the target's own broker (a restart of Kafka on a NATS target has nothing to restart).
void requireFaultOnTarget(const Fault& fault, const Target& target, const std::string& what);

} // namespace idem
