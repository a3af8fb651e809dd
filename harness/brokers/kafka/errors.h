#pragma once
/// Kafka's error codes by name (Apache Kafka's org.apache.kafka.common.protocol.Errors, 3.9), for reply
/// summaries and for faults that answer a request with an error.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace idem::kafka {

/// The codes the harness itself acts on (the broker's answers it reads or forwards changed).
inline constexpr int16_t kRebalanceInProgress = 27, kInvalidRequest = 42;

/// "REBALANCE_IN_PROGRESS" for 27; "ERROR_<code>" for a code not in the table.
std::string errorName(int16_t code);
/// The code named `name` ("REBALANCE_IN_PROGRESS"), or nullopt.
std::optional<int16_t> errorCode(std::string_view name);

} // namespace idem::kafka
