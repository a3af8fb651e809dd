#pragma once
/// Messages the proxy sends in a party's place: the response a broker gives when a request fails (the
/// `error` fault at a Kafka step), and the LeaveGroup a member sends when it closes (the proxy sends it for
/// a member it killed, so that the group rebalances at once instead of waiting out the session). Pure.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace idem::kafka {

/// The response frame a broker sends to `request` (a whole request frame, as the client sent it) when it
/// fails with error `code`: the same correlation id and version, and `code` wherever the layout has an
/// error (each partition of a commit, fetch, produce or offset list; the group; the transaction), other
/// values empty or -1. nullopt for an API key with no step (the proxy answers steps only) or a request
/// that does not decode.
std::optional<std::string> errorResponse(std::string_view request, int16_t code);

/// What a consumer's connection to its group coordinator shows of its membership: learnt from its
/// JoinGroup answers and the group requests it sends.
struct Membership {
  std::string group;
  std::string member;
  std::optional<std::string> instance; ///< group.instance.id (static membership)
  int32_t generation = -1;
  std::string clientId;
  /// The LeaveGroup version to use: the highest both the tables and the broker's ApiVersions answer allow
  /// (1 when the connection saw no ApiVersions answer: every broker up to Kafka 3.9 takes it).
  int16_t leaveVersion = 1;
};

/// A LeaveGroup request frame for `m`, with correlation id `correlation`.
std::string leaveGroupRequest(const Membership& m, int32_t correlation);

} // namespace idem::kafka
