#pragma once
/// NATS JetStream behind the broker seam (brokers/broker.h): on the workspace's embedded nats-server, a
/// stream `events_N` on subject `events.N` and a durable pull consumer `consumers_N` (explicit acks) per
/// run. The producer publishes each event as a JSON object of its fields (strings) with the headers
/// `event_id` and a fresh `Nats-Msg-Id` (so that JetStream's duplicate window never hides a publish);
/// delivered means a pull request's answer carried it; acknowledged means +ACK or +TERM; settled means
/// that the durable has nothing pending nor awaiting an ack, and delivered every message at least once.
/// On the user's server (--nats-url) the names carry the workspace's tag (`idemproof_<tag>_events_N` on
/// `idemproof.<tag>.events.N`, durable `idemproof_<tag>_consumers_N`) and the stream goes with the workspace.
#include "brokers/broker.h"
#include "brokers/on_user_broker.h"
#include "brokers/nats/client/endpoint.h"

#include <memory>
#include <string>

namespace idem::nats::client {

class EmbeddedNats;
class Admin;

class NatsBroker final : public brokers::Broker {
public:
  /// Starts the workspace's server. `ackWaitMs`: the durable's AckWait, the consumers' CLAIM_IDLE_MS.
  explicit NatsBroker(int ackWaitMs);
  /// The user's server at `at`; `tag`: a word unique to this workspace among every idemproof sharing the
  /// server. Throws UsageError when it can't connect.
  NatsBroker(const NatsEndpoint& at, const std::string& tag, int ackWaitMs);
  ~NatsBroker() override;

  const char* name() const override { return "nats"; }
  static constexpr const char* kTitle = "NATS"; ///< the broker's name for people
  const char* title() const override { return kTitle; }
  const char* protocol() const override { return "NATS"; }
  proxy::Upstream upstream() const override;
  proxy::TrackerPtr tracker(int listenPort) override;
  std::string stream() const override { return stream_; }
  std::string group() const override { return durable_; }
  void reset() override;
  std::vector<std::string> publish(const std::vector<brokers::Message>& messages) override;
  brokers::Progress progress() override;
  void forget() override;
  brokers::Leftover leftover() override;
  std::map<std::string, std::string> connectionEnv(int proxyPort) const override;
  std::map<std::string, std::string> consumerEnv() const override;
  void reconnect() override;
  bool restart() override;
  bool redeliversAfterClaimIdle() const override { return true; } ///< AckWait is CLAIM_IDLE_MS
  /// An `error` at a NATS step: the server refuses the publish (tracker.h: errorAnswer).
  bool answersErrorsByRequest() const override { return true; }
  std::optional<std::string> errorAnswer(std::string_view request, const std::string& code) const override;
  std::string defaultError(const std::string& verb) const override;

private:
  void createConsumer();

  NatsEndpoint at_;  ///< the server: the embedded one's port and token, or the user's
  std::string tag_;  ///< empty on the embedded server (it is the workspace's alone)
  std::unique_ptr<brokers::OnUserBroker> onSignal_; ///< the user's server: the run's stream, for a signal
  int ackWaitMs_;
  int run_ = 0;
  std::string stream_, subject_, durable_;
  uint64_t lastSeq_ = 0;
  std::unique_ptr<EmbeddedNats> server_;
  std::unique_ptr<Admin> admin_;
};

} // namespace idem::nats::client
