#include "supervisor/broker_registry.h"

#include "brokers/kafka/client/kafka_broker.h"
#include "brokers/nats/client/nats_broker.h"
#include "brokers/rabbitmq/client/rabbitmq_broker.h"
#include "brokers/valkey/valkey_broker.h"

#include "core/error.h"
#include "plan/fault_kind.h"

#include <fmt/format.h>

#include <array>

namespace idem {
namespace {

/// What the harness knows of one broker: its manifest name, its name for people, the flag naming the user's
/// broker instead of an embedded one, and how to make the broker of one workspace.
struct BrokerEntry {
  const char* name;
  const char* title;
  const char* urlFlag; ///< "" when only an embedded broker (or --valkey-url, a server flag) is used
  bool runsMostlyWait; ///< runs mostly wait on the broker's own timers (a consumer group's joins)
  bool (*has)(const std::string& feature);
  void (*checkUrl)(const std::string& url); ///< throws UsageError naming urlFlag
  /// The broker of one workspace; `url` the user's broker (urlFlag's value), or null for an embedded one.
  brokers::BrokerPtr (*make)(const ServerEndpoints& s, const std::string& stream, const std::string& tag,
                             int claimIdleMs, const std::string* url);
};

bool hasNothing(const std::string&) { return false; }
void noUrl(const std::string&) {}

const std::array<BrokerEntry, 4> kBrokers{{
    {"valkey", brokers::ValkeyBroker::kTitle, "", false, hasNothing, noUrl,
     [](const ServerEndpoints& s, const std::string& stream, const std::string&, int, const std::string*) -> brokers::BrokerPtr {
       // Embedded: each workspace has a Valkey of its own (Session::workspace); external: the URL's database.
       brokers::ValkeyEndpoint ep{s.valkey_host, s.valkey_port, s.valkey_password, s.valkey_db, s.embedded};
       return std::make_unique<brokers::ValkeyBroker>(ep, stream, "idemproof");
     }},
    // Its own embedded broker per workspace (librdkafka's mock cluster: brokers/kafka/README.md).
    {"kafka", kafka::client::KafkaBroker::kTitle, "", kafka::client::KafkaBroker::kRunsMostlyWait,
     kafka::client::KafkaBroker::has, noUrl,
     [](const ServerEndpoints&, const std::string&, const std::string&, int, const std::string*) -> brokers::BrokerPtr {
       return std::make_unique<kafka::client::KafkaBroker>();
     }},
    // Its own embedded nats-server per workspace; the durable redelivers what waits for an ack CLAIM_IDLE_MS
    // long (AckWait), as a Valkey consumer claims it.
    {"nats", nats::client::NatsBroker::kTitle, "--nats-url", false, hasNothing,
     [](const std::string& url) { nats::client::parseNatsUrl(url); },
     [](const ServerEndpoints&, const std::string&, const std::string& tag, int claimIdleMs,
        const std::string* url) -> brokers::BrokerPtr {
       if (url) return std::make_unique<nats::client::NatsBroker>(nats::client::parseNatsUrl(*url), tag, claimIdleMs);
       return std::make_unique<nats::client::NatsBroker>(claimIdleMs);
     }},
    // One RabbitMQ node per idemproof command, shared by the workspaces, a vhost each (brokers/rabbitmq/README.md).
    {"rabbitmq", rabbitmq::client::RabbitMqBroker::kTitle, "--amqp-url", false, hasNothing,
     [](const std::string& url) { rabbitmq::client::parseAmqpUrl(url); },
     [](const ServerEndpoints&, const std::string&, const std::string& tag, int, const std::string* url) -> brokers::BrokerPtr {
       if (url) return std::make_unique<rabbitmq::client::RabbitMqBroker>(rabbitmq::client::parseAmqpUrl(*url), tag);
       return std::make_unique<rabbitmq::client::RabbitMqBroker>();
     }},
}};

/// The entry of broker `broker`, or null when no broker has that name.
const BrokerEntry* entryOf(const std::string& broker) {
  for (const auto& e : kBrokers)
    if (broker == e.name) return &e;
  return nullptr;
}

} // namespace

brokers::BrokerPtr makeBroker(const ServerEndpoints& s, const Target& target, const std::string& stream,
                              const std::string& tag, int claimIdleMs) {
  const BrokerEntry* e = entryOf(target.broker);
  if (!e) throw UsageError(fmt::format("{}: field 'broker': no broker '{}'", target.manifest.string(), target.broker));
  const auto url = s.broker_urls.find(target.broker);
  return e->make(s, stream, tag, claimIdleMs, url == s.broker_urls.end() ? nullptr : &url->second);
}

std::string brokerUrlFlag(const std::string& broker) {
  const BrokerEntry* e = entryOf(broker);
  return e ? e->urlFlag : "";
}

void checkBrokerUrl(const std::string& broker, const std::string& url) {
  if (const BrokerEntry* e = entryOf(broker)) e->checkUrl(url);
}

bool brokerHas(const std::string& broker, const std::string& feature) {
  const BrokerEntry* e = entryOf(broker);
  return e && e->has(feature);
}

bool brokerRunsMostlyWait(const std::string& broker) {
  const BrokerEntry* e = entryOf(broker);
  return e && e->runsMostlyWait;
}

std::string brokerTitle(const std::string& broker) {
  const BrokerEntry* e = entryOf(broker);
  return e ? e->title : broker;
}

void requireKindOnBroker(const std::string& kind, const Target& target, const std::string& what) {
  const std::string feature = faultKind(kind, what).brokerFeature();
  if (feature.empty() || target.kind != "consumer" || brokerHas(target.broker, feature)) return;
  std::string having;
  for (const auto& e : kBrokers)
    if (e.has(feature)) having += std::string(having.empty() ? "" : ", ") + e.name;
  throw UsageError(fmt::format("{}: a {} fault needs a broker that has '{}' ({} has); target '{}' runs on {}", what,
                               kind, feature, having, target.name, target.broker));
}

void requireFaultOnTarget(const Fault& fault, const Target& target, const std::string& what) {
  requireKindOnBroker(fault.kind, target, what);
  if (fault.kind != "restart" || fault.args.empty()) return;
  const std::string& server = fault.args[0];
  if (server == "pg" || server == "valkey" || (target.kind == "consumer" && server == target.broker)) return;
  throw UsageError(fmt::format("{}: {} restarts {}, which target '{}' does not run on (it has pg, valkey{})", what,
                               fault.str(), brokerTitle(server), target.name,
                               target.kind == "consumer" && target.broker != "valkey" ? " and " + target.broker : ""));
}

} // namespace idem
