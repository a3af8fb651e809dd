#pragma once
/// Rewriting the responses that tell a client where to connect, so that no client of the proxy connects
/// around it: the broker addresses of Metadata, FindCoordinator and (flexible versions) the NodeEndpoints
/// of Fetch and Produce become the proxy's listeners, one per broker. And the ApiVersions answer is
/// capped at the versions the tracker decodes, so that a newer client never picks a layout the proxy
/// cannot read. Pure, given a pure `addressFor`.
#include "brokers/kafka/collector.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace idem::kafka {

struct Address {
  std::string host;
  int32_t port = 0;
  friend bool operator==(const Address&, const Address&) = default;
};

/// The address a client is to be given for broker `nodeId`, which the broker advertises as `advertised`;
/// nullopt leaves the broker's own. The proxy answers with one of its listeners (opening one for a broker
/// it sees for the first time) and relays that listener to `advertised`.
using AddressFor = std::function<std::optional<Address>(int32_t nodeId, const Address& advertised)>;

struct RewriteResult {
  bool ok = true;                 ///< false: the body does not decode (the tracker stops observing)
  std::optional<std::string> body; ///< the new body; nullopt when nothing changed
  std::vector<Node> brokers;      ///< the brokers the response lists, as the broker advertised them
  std::map<int16_t, int16_t> maxVersions; ///< ApiVersions: each key's highest version, as the broker said
};

/// Rewrites a response body (after the header) of API `key` at `version`: broker addresses through
/// `addressFor` (when set), and ApiVersions' highest versions capped (when `capVersions`). Metadata
/// responses also teach `names` their topic ids.
RewriteResult rewriteResponse(int16_t key, int16_t version, std::string_view body, const AddressFor& addressFor,
                              bool capVersions, TopicNames& names);

} // namespace idem::kafka
