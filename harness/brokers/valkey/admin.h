#pragma once
/// The harness's own connection to Valkey/Redis (never through the proxies): the producer, the group's
/// progress and the final state.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

struct redisContext;

namespace idem {

/// A Valkey/Redis connection (hiredis, RESP2).
class ValkeyAdmin {
public:
  ValkeyAdmin(const std::string& host, int port, const std::string& password, int db);
  ~ValkeyAdmin();
  ValkeyAdmin(const ValkeyAdmin&) = delete;
  ValkeyAdmin& operator=(const ValkeyAdmin&) = delete;

  /// One command; the reply as JSON (strings, integers, arrays, null). Throws on an error reply.
  nlohmann::json command(const std::vector<std::string>& argv);
  /// Several commands pipelined; replies in order.
  std::vector<nlohmann::json> pipeline(const std::vector<std::vector<std::string>>& cmds);

private:
  redisContext* ctx_ = nullptr;
  std::string where_;
};

} // namespace idem
