#pragma once
/// A small synchronous HTTP/1.1 client for consumers that call the sink (docs/target-contract.md, "The
/// sink"): one connection per call, closed after its answer.
#include <chrono>
#include <optional>
#include <string>

namespace idem::targets {

struct SinkAnswer {
  int status = 0;
  std::string body;
};

/// Sends `method path` with the JSON `body` to the server of `sinkUrl` ("http://127.0.0.1:PORT", the
/// harness's SINK_URL), with header Idempotency-Key: `key` when given, and returns the answer. Throws
/// std::runtime_error when it can't connect, the connection breaks, or no answer came within `timeout`.
SinkAnswer charge(const std::string& sinkUrl, const std::string& method, const std::string& path,
                  const std::string& jsonBody, const std::optional<std::string>& key = std::nullopt,
                  std::chrono::milliseconds timeout = std::chrono::milliseconds(1000));

/// SINK_URL from the environment; throws std::runtime_error when it is not set.
std::string sinkUrlFromEnv();

} // namespace idem::targets
