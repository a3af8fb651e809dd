#include "supervisor/broker_registry.h"

#include "brokers/kafka/client/kafka_broker.h"
#include "brokers/nats/client/nats_broker.h"
#include "brokers/rabbitmq/client/rabbitmq_broker.h"
#include "brokers/valkey/valkey_broker.h"

#include "core/error.h"
#include "plan/fault_kind.h"

#include <fmt/format.h>

#include <map>

namespace idem {

brokers::BrokerPtr makeBroker(const ServerEndpoints& s, const Target& target, const std::string& stream,
                              const std::string& tag, int claimIdleMs) {
  const auto url = s.broker_urls.find(target.broker);
  if (target.broker == "valkey") {
    // Embedded: each workspace has a Valkey of its own (Session::workspace); external: the URL's database.
    brokers::ValkeyEndpoint ep{s.valkey_host, s.valkey_port, s.valkey_password, s.valkey_db, s.embedded};
    return std::make_unique<brokers::ValkeyBroker>(ep, stream, "idemproof");
  }
  // Its own embedded broker per workspace (librdkafka's mock cluster: brokers/kafka/README.md).
  if (target.broker == "kafka") return std::make_unique<kafka::client::KafkaBroker>();
  // Its own embedded nats-server per workspace; the durable redelivers what waits for an ack CLAIM_IDLE_MS
  // long (AckWait), as a Valkey consumer claims it.
  if (target.broker == "nats") {
    if (url != s.broker_urls.end())
      return std::make_unique<nats::client::NatsBroker>(nats::client::parseNatsUrl(url->second), tag, claimIdleMs);
    return std::make_unique<nats::client::NatsBroker>(claimIdleMs);
  }
  // One RabbitMQ node per idemproof command, shared by the workspaces, a vhost each (brokers/rabbitmq/README.md).
  if (target.broker == "rabbitmq") {
    if (url != s.broker_urls.end())
      return std::make_unique<rabbitmq::client::RabbitMqBroker>(rabbitmq::client::parseAmqpUrl(url->second), tag);
    return std::make_unique<rabbitmq::client::RabbitMqBroker>();
  }
  throw UsageError(fmt::format("{}: field 'broker': no broker '{}'", target.manifest.string(), target.broker));
}

std::string brokerUrlFlag(const std::string& broker) {
  if (broker == "rabbitmq") return "--amqp-url";
  if (broker == "nats") return "--nats-url";
  return "";
}

void checkBrokerUrl(const std::string& broker, const std::string& url) {
  if (broker == "rabbitmq") rabbitmq::client::parseAmqpUrl(url);
  else if (broker == "nats") nats::client::parseNatsUrl(url);
}

bool brokerHas(const std::string& broker, const std::string& feature) {
  if (broker == "kafka") return kafka::client::KafkaBroker::has(feature);
  return false;
}

bool brokerRunsMostlyWait(const std::string& broker) {
  return broker == "kafka" && kafka::client::KafkaBroker::kRunsMostlyWait;
}

std::string brokerTitle(const std::string& broker) {
  static const std::map<std::string, std::string> titles{{"valkey", brokers::ValkeyBroker::kTitle},
                                                         {"kafka", kafka::client::KafkaBroker::kTitle},
                                                         {"nats", nats::client::NatsBroker::kTitle},
                                                         {"rabbitmq", rabbitmq::client::RabbitMqBroker::kTitle}};
  auto t = titles.find(broker);
  return t == titles.end() ? broker : t->second;
}

void requireKindOnBroker(const std::string& kind, const Target& target, const std::string& what) {
  const std::string feature = faultKind(kind, what).brokerFeature();
  if (feature.empty() || target.kind != "consumer" || brokerHas(target.broker, feature)) return;
  throw UsageError(fmt::format("{}: a {} fault needs a broker that has '{}' (kafka has); target '{}' runs on {}", what,
                               kind, feature, target.name, target.broker));
}

} // namespace idem
