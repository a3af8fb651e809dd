#pragma once
/// RabbitMQ behind the broker seam (brokers/broker.h): a vhost per workspace on the command's one embedded
/// node, a durable queue per run; or, on the user's broker (--amqp-url), a durable queue per run in the
/// URL's vhost, named after the workspace (`idemproof.<tag>.events.N`), deleted when the workspace goes. The producer publishes each event as a persistent message whose body is
/// the event's fields as a JSON object of strings, with a fresh message_id (the entry id) and an `event_id`
/// header; delivered means a basic.deliver (or basic.get-ok) reached a consumer; acknowledged means a
/// basic.ack (or a basic.reject / basic.nack without requeue) settled it; settled means nothing ready in
/// the queue and nothing delivered and unacknowledged.
#include "brokers/broker.h"
#include "brokers/on_user_broker.h"
#include "brokers/rabbitmq/client/endpoint.h"

#include <memory>
#include <set>
#include <string>

namespace idem::rabbitmq::client {

class AmqpAdmin;
class EmbeddedRabbit;
struct Ledger;

class RabbitMqBroker final : public brokers::Broker {
public:
  /// On the command's node, joined (or started) by the first reset(), a vhost of this workspace's.
  RabbitMqBroker();
  /// The user's broker at `at`; `tag` is a word unique to this workspace among every idemproof that
  /// shares the broker (its queues' names carry it). Throws UsageError when it can't log in.
  RabbitMqBroker(const AmqpEndpoint& at, const std::string& tag);
  ~RabbitMqBroker() override;

  const char* name() const override { return "rabbitmq"; }
  static constexpr const char* kTitle = "RabbitMQ"; ///< the broker's name for people
  const char* title() const override { return kTitle; }
  const char* protocol() const override { return "AMQP 0-9-1"; }
  proxy::Upstream upstream() const override;
  proxy::TrackerPtr tracker(int listenPort) override;
  std::string stream() const override { return queue_; }
  /// The consumers of a queue compete for its messages: the queue is their group.
  std::string group() const override { return queue_; }
  void reset() override;
  std::vector<std::string> publish(const std::vector<brokers::Message>& messages) override;
  brokers::Progress progress() override;
  void forget() override;
  brokers::Leftover leftover() override;
  std::map<std::string, std::string> connectionEnv(int proxyPort) const override;
  std::map<std::string, std::string> consumerEnv() const override { return {{"QUEUE", queue_}}; }
  /// An error fault answers the request with a connection.close in the broker's name (CONNECTION_FORCED,
  /// 320, by default; INTERNAL_ERROR, 541): AMQP's errors end a channel or the connection.
  bool answersErrorsByRequest() const override { return true; }
  /// A connection.close: the proxy closes the connection once the client has it, as the broker does.
  bool errorEndsConnection() const override { return true; }
  std::optional<std::string> errorAnswer(std::string_view request, const std::string& code) const override;
  std::string defaultError(const std::string&) const override { return "CONNECTION_FORCED"; }
  bool restart() override;
  /// A node of this workspace's own from now on (started once, seconds): the command's node is shared.
  void ownForRestart() override;
  void reconnect() override;
  /// "<queue>.<declared>", a durable queue of the run beside its own, declared empty.
  std::string deadLetter(const std::string& kind, const std::string& declared) override;
  const char* deadLetterEnv() const override { return "DEAD_LETTER_QUEUE"; }
  std::vector<brokers::DeadLetter> deadLetters(const std::string& idField) override;

private:
  /// f(admin connection), again on a new connection when it throws.
  template <class F>
  auto admin(F&& f);

  /// Uses `node` from now on: this workspace's vhost on it, a new admin connection.
  void attach(std::shared_ptr<EmbeddedRabbit> node);
  /// The queue of run `n`.
  std::string queueName(int n) const;
  /// The run's messages a no-ack delivery took from the queue unseen (leftover()).
  std::set<std::string> settledUnseen();

  std::shared_ptr<EmbeddedRabbit> node_; ///< null on the user's broker
  AmqpEndpoint at_;
  std::string tag_;                      ///< empty on the embedded node (the vhost is the workspace's)
  bool ownNode_ = false;                 ///< node_ is this workspace's alone
  std::unique_ptr<brokers::OnUserBroker> onSignal_; ///< the user's broker: the run's queue, for a signal
  int run_ = 0;
  std::string queue_;
  std::string deadLetter_; ///< the run's dead-letter queue, "" when the scenario has none
  std::unique_ptr<AmqpAdmin> admin_;
  std::shared_ptr<Ledger> ledger_;
};

} // namespace idem::rabbitmq::client
