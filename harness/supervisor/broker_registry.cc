#include "supervisor/broker_registry.h"

#include "brokers/valkey/valkey_broker.h"

#include "core/error.h"

#include <fmt/format.h>

namespace idem {

brokers::BrokerPtr makeBroker(const ServerEndpoints& s, const Target& target, const std::string& stream,
                              const std::string& tag) {
  (void)tag;
  if (target.broker == "valkey") {
    // Embedded: each workspace has a Valkey of its own (Session::workspace); external: the URL's database.
    brokers::ValkeyEndpoint ep{s.valkey_host, s.valkey_port, s.valkey_password, s.valkey_db, s.embedded};
    return std::make_unique<brokers::ValkeyBroker>(ep, stream, "idemproof");
  }
  throw UsageError(fmt::format("{}: field 'broker': no broker '{}'", target.manifest.string(), target.broker));
}

} // namespace idem
