#pragma once
/// Valkey/Redis Streams (docs/target-contract.md): a stream and its consumer group per workspace; the
/// producer XADDs, delivered means read with XREADGROUP (or claimed), acknowledged means XACKed, and
/// the group's progress is XINFO GROUPS.
#include "brokers/broker.h"

#include <memory>
#include <string>

namespace idem {
class ValkeyAdmin;
}

namespace idem::brokers {

struct ValkeyEndpoint {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string password; ///< may be empty
  int db = 0;
  /// Its server is idemproof's, for this workspace alone: reset may FLUSHDB. Else only the stream is
  /// ours: reset deletes it, and so do the destructor and a signal's cleanup.
  bool owned = true;
};

class ValkeyBroker final : public Broker {
public:
  ValkeyBroker(ValkeyEndpoint endpoint, std::string stream, std::string group);
  ~ValkeyBroker() override;

  const char* name() const override { return "valkey"; }
  static constexpr const char* kTitle = "Valkey"; ///< the broker's name for people
  const char* title() const override { return kTitle; }
  const char* protocol() const override { return "RESP"; }
  proxy::Upstream upstream() const override { return {ep_.host, ep_.port}; }
  proxy::TrackerPtr tracker(int listenPort) override;
  std::string stream() const override { return stream_; }
  std::string group() const override { return group_; }
  void reset() override;
  std::vector<std::string> publish(const std::vector<Message>& messages) override;
  Progress progress() override;
  void forget() override;
  std::optional<std::pair<int64_t, int64_t>> ageKeys(int64_t ms) override;
  Leftover leftover() override;
  std::map<std::string, std::string> connectionEnv(int proxyPort) const override;
  std::map<std::string, std::string> consumerEnv() const override { return {{"STREAM", stream_}, {"GROUP", group_}}; }
  void reconnect() override;
  bool redeliversAfterClaimIdle() const override { return true; } ///< consumers claim what idles CLAIM_IDLE_MS
  /// "<stream>.<declared>": a stream beside the run's own.
  std::string deadLetter(const std::string& kind, const std::string& declared) override;
  std::vector<DeadLetter> deadLetters(const std::string& idField) override;

private:
  ValkeyEndpoint ep_;
  std::string stream_, group_;
  std::string deadLetter_; ///< the dead-letter stream, "" when the scenario has none
  std::unique_ptr<ValkeyAdmin> admin_;
  std::string lastPublished_ = "0-0";
  int cleanupId_ = -1;
};

} // namespace idem::brokers
