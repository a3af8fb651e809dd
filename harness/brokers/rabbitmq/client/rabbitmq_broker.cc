#include "brokers/rabbitmq/client/rabbitmq_broker.h"
#include "brokers/rabbitmq/client/admin.h"
#include "brokers/rabbitmq/client/embedded.h"
#include "brokers/rabbitmq/client/ledger.h"

#include "brokers/rabbitmq/tracker.h"
#include "brokers/rabbitmq/wire.h"

#include "core/error.h"

#include <boost/url/encode.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

namespace idem::rabbitmq::client {

namespace {

/// The AMQP tracker of one connection, reporting to the ledger. When the connection ends (the tracker goes
/// with it), what it held unacknowledged is the broker's again: on its way back to the queue.
class RunTracker final : public proxy::Tracker {
public:
  explicit RunTracker(std::shared_ptr<Ledger> ledger) : inner_(makeTracker()), ledger_(std::move(ledger)) {}
  ~RunTracker() override {
    std::lock_guard<std::mutex> lock(ledger_->mu);
    ledger_->ended(this, Ledger::Clock::now());
  }

  proxy::Decode onClient(std::string_view buf, proxy::ClientMsg& out) override {
    auto d = inner_->onClient(buf, out);
    if (d == proxy::Decode::Message) note(out.kind == proxy::ClientMsg::Kind::RequestEnd ? &out.step.acked : nullptr, nullptr);
    return d;
  }
  proxy::Decode onServer(std::string_view buf, proxy::ServerMsg& out) override {
    auto d = inner_->onServer(buf, out);
    // A push (a delivery) may settle what it delivers itself (no-ack).
    if (d == proxy::Decode::Message) note(out.kind == proxy::ServerMsg::Kind::Push ? &out.step.acked : nullptr, &out.reply.delivered);
    return d;
  }
  void withdrawLast() override { inner_->withdrawLast(); }
  std::vector<std::string> returnedAtEnd() const override { return inner_->returnedAtEnd(); }

private:
  void note(const std::vector<std::string>* acked, const std::vector<proxy::EntryView>* delivered) {
    std::vector<std::string> ids;
    if (delivered)
      for (const auto& e : *delivered) ids.push_back(e.id);
    std::lock_guard<std::mutex> lock(ledger_->mu);
    ledger_->update(this, inner_->unacked(), acked ? *acked : std::vector<std::string>{}, ids, Ledger::Clock::now());
    ledger_->noAck = ledger_->noAck || inner_->settlesOnDelivery();
  }

  std::unique_ptr<AmqpTracker> inner_;
  std::shared_ptr<Ledger> ledger_;
};

std::atomic<int> workspaces{0};

} // namespace

template <class F>
auto RabbitMqBroker::admin(F&& f) {
  // The node is shared: another workspace's restart fault drops this connection too. One new connection
  // then, and once more the request.
  try {
    return f(*admin_);
  } catch (const std::runtime_error&) {
    reconnect();
    return f(*admin_);
  }
}

RabbitMqBroker::RabbitMqBroker() : ledger_(std::make_shared<Ledger>()) {
  // The node is joined (or started) by the first reset(): a workspace whose first schedule restarts
  // RabbitMQ starts a node of its own instead, and never waits for the shared one.
  at_.vhost = fmt::format("workspace-{}", ++workspaces);
}

void RabbitMqBroker::attach(std::shared_ptr<EmbeddedRabbit> node) {
  node_ = std::move(node);
  at_ = {"127.0.0.1", node_->port(), node_->user(), node_->password(), at_.vhost};
  node_->addVhost(at_.vhost);
  reconnect();
  run_ = 0; // nothing of this node's to delete at the next reset
}

void RabbitMqBroker::ownForRestart() {
  if (ownNode_ || !tag_.empty()) return; // already its own, or the user's broker (Session refuses its restarts)
  // The last run's queue on the shared node goes; the next reset() declares a fresh one on this one.
  try {
    if (node_ && run_ > 0) admin([&](AmqpAdmin& a) { a.deleteQueue(queue_); });
  } catch (const std::exception&) {
  }
  attach(EmbeddedRabbit::own());
  ownNode_ = true;
}

RabbitMqBroker::RabbitMqBroker(const AmqpEndpoint& at, const std::string& tag)
    : at_(at), tag_(tag), ledger_(std::make_shared<Ledger>()) {
  try {
    reconnect();
  } catch (const std::runtime_error& e) {
    throw UsageError(fmt::format("--amqp-url: {}", e.what()));
  }
  onSignal_ = std::make_unique<brokers::OnUserBroker>("RabbitMQ queue of " + tag, [at](const std::string& queue) {
    AmqpAdmin(at.host, at.port, at.user, at.password, at.vhost).deleteQueue(queue);
  });
}

RabbitMqBroker::~RabbitMqBroker() {
  if (tag_.empty()) return;
  onSignal_.reset();
  try {
    if (run_ > 0) admin([&](AmqpAdmin& a) { a.deleteQueue(queue_); });
  } catch (const std::exception&) {
  }
}

std::string RabbitMqBroker::queueName(int n) const {
  return tag_.empty() ? fmt::format("events.{}", n) : fmt::format("idemproof.{}.events.{}", tag_, n);
}

void RabbitMqBroker::reconnect() {
  if (!node_ && tag_.empty()) return; // no node yet: the first reset() connects
  admin_ = std::make_unique<AmqpAdmin>(at_.host, at_.port, at_.user, at_.password, at_.vhost);
}

proxy::Upstream RabbitMqBroker::upstream() const { return {at_.host, at_.port}; }

proxy::TrackerPtr RabbitMqBroker::tracker(int) { return std::make_unique<RunTracker>(ledger_); }

void RabbitMqBroker::reset() {
  if (!node_ && tag_.empty()) attach(EmbeddedRabbit::shared());
  // A new queue per run: nothing of the last run's messages is seen again (a consumer of the old queue that
  // still lives would get a channel error when it goes).
  if (run_ > 0) admin([&](AmqpAdmin& a) { a.deleteQueue(queue_); });
  ++run_;
  queue_ = queueName(run_);
  if (onSignal_) onSignal_->set(queue_);
  admin([&](AmqpAdmin& a) { a.declareQueue(queue_); });
  std::lock_guard<std::mutex> lock(ledger_->mu);
  ledger_->clear();
}

std::vector<std::string> RabbitMqBroker::publish(const std::vector<brokers::Message>& messages) {
  std::vector<std::string> ids;
  for (const auto& m : messages) {
    nlohmann::json value = nlohmann::json::object();
    for (const auto& [k, v] : m.fields) value[k] = v;
    std::string id;
    {
      std::lock_guard<std::mutex> lock(ledger_->mu);
      id = fmt::format("{}-{}", queue_, ledger_->order.size() + 1); // fresh per publish: a retry gets its own
      ledger_->order.push_back(id);
      ledger_->published[id] = {value.dump(), m.eventId};
      ledger_->undelivered.insert(id);
    }
    admin([&](AmqpAdmin& a) { a.publish(queue_, value.dump(), id, m.eventId); });
    ids.push_back(id);
  }
  return ids;
}

brokers::Progress RabbitMqBroker::progress() {
  brokers::Progress out;
  const int64_t ready = admin([&](AmqpAdmin& a) { return a.counts(queue_); }).ready;
  std::lock_guard<std::mutex> lock(ledger_->mu);
  // Handed back and not in the queue yet (a connection that just ended): pending too (ledger.h).
  out.pending = ledger_->pending(ready, Ledger::Clock::now());
  const int64_t back = static_cast<int64_t>(ledger_->returning.size());
  const int64_t unacked = out.pending - ready - back;
  // Left the queue, every one: delivered, though no tracker may have read a push of a no-ack subscription
  // (its connection cut while it was on its way: settled all the same, settledUnseen). A push still on its
  // way is waited for as any delivery unseen (liveness.h), never counted as work no one will do.
  out.delivered = ledger_->undelivered.empty() || (ledger_->noAck && ready == 0);
  out.position = fmt::format("{} ready, {} unacknowledged", ready, unacked);
  if (back > 0) out.position += fmt::format(", {} on their way back to the queue", back);
  return out;
}

void RabbitMqBroker::forget() {
  // What a node that lost its acknowledgements would do (a failover to a mirror that never saw them): the
  // acknowledged messages are in the queue again. Published again, in their first order, with their own
  // message_id and body, so that deliveries name the same entries.
  std::vector<std::pair<std::string, Ledger::Published>> again;
  {
    std::lock_guard<std::mutex> lock(ledger_->mu);
    for (const auto& id : ledger_->order)
      if (ledger_->acked.erase(id)) {
        again.emplace_back(id, ledger_->published[id]);
        ledger_->undelivered.insert(id);
      }
  }
  for (const auto& [id, p] : again) admin([&](AmqpAdmin& a) { a.publish(queue_, p.body, id, p.eventId); });
}

std::set<std::string> RabbitMqBroker::settledUnseen() {
  // Pushes of a no-ack subscription that no tracker read (its process killed while they were on their way)
  // are settled by the broker all the same: neither ready in the queue nor held by a connection. The queue
  // says which: asked once no consumer is subscribed, when a closed connection's unacknowledged messages
  // are back in it. Runs with no no-ack connection never ask (nothing leaves the queue unacknowledged).
  std::set<std::string> missing;
  {
    std::lock_guard<std::mutex> lock(ledger_->mu);
    if (!ledger_->noAck) return missing;
    const auto unacked = ledger_->allUnacked();
    for (const auto& id : ledger_->order)
      if (!ledger_->acked.count(id) && !unacked.count(id)) missing.insert(id);
  }
  if (missing.empty()) return missing;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (admin([&](AmqpAdmin& a) { return a.counts(queue_); }).consumers > 0) {
    if (std::chrono::steady_clock::now() > until) return {}; // still subscribed: the queue cannot tell yet
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const auto& id : admin([&](AmqpAdmin& a) { return a.peek(queue_); })) missing.erase(id);
  return missing;
}

brokers::Leftover RabbitMqBroker::leftover() {
  brokers::Leftover l;
  const auto p = progress();
  const auto gone = settledUnseen();
  std::lock_guard<std::mutex> lock(ledger_->mu);
  const auto unacked = ledger_->allUnacked();
  for (const auto& id : ledger_->order) {
    l.stream.push_back(id);
    if (unacked.count(id)) l.pending.push_back({id, "", 0, 1});
    else if (gone.count(id)) l.settledUnseen.push_back(id);
    else if (!ledger_->acked.count(id)) l.undelivered.push_back(id); // in the queue: delivered (again) later
  }
  l.position = p.position;
  return l;
}

std::string RabbitMqBroker::deadLetter(const std::string& kind, const std::string& declared) {
  if (kind != "queue") return "";
  if (!deadLetter_.empty()) admin([&](AmqpAdmin& a) { a.deleteQueue(deadLetter_); });
  deadLetter_ = queue_ + "." + declared;
  admin([&](AmqpAdmin& a) { a.declareQueue(deadLetter_); });
  return deadLetter_;
}

std::vector<brokers::DeadLetter> RabbitMqBroker::deadLetters(const std::string& idField) {
  std::vector<brokers::DeadLetter> out;
  if (deadLetter_.empty()) return out;
  auto messages = admin([&](AmqpAdmin& a) { return a.drain(deadLetter_); });
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& [messageId, body] = messages[i];
    brokers::DeadLetter d{messageId.empty() ? std::to_string(i + 1) : messageId, std::nullopt};
    const auto value = nlohmann::json::parse(body, nullptr, false);
    if (value.is_object() && value.contains(idField) && value[idField].is_string())
      d.eventId = value[idField].get<std::string>();
    out.push_back(std::move(d));
  }
  return out;
}

std::map<std::string, std::string> RabbitMqBroker::connectionEnv(int proxyPort) const {
  auto enc = [](const std::string& s) { return boost::urls::encode(s, boost::urls::unreserved_chars); };
  return {{"AMQP_URL", fmt::format("amqp://{}:{}@127.0.0.1:{}/{}", enc(at_.user), enc(at_.password), proxyPort,
                                   enc(at_.vhost))}};
}

std::optional<std::string> RabbitMqBroker::errorAnswer(std::string_view request, const std::string& code) const {
  uint16_t reply = 0;
  std::string text;
  if (code == "CONNECTION_FORCED") reply = 320, text = "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'";
  else if (code == "INTERNAL_ERROR") reply = 541, text = "INTERNAL_ERROR";
  else return std::nullopt;
  uint32_t failing = 0;
  Frame f;
  if (readFrame(request, f) == Framed::Whole && f.type == 1)
    if (auto m = readMethod(f.payload)) failing = m->id;
  // The proxy closes both sides once the client has it (errorEndsConnection): what the client sends after
  // it (close-ok, acks already on their way) never reaches the broker, which requeues what was unacked, as
  // a broker that closed the connection discards all but close-ok.
  return connectionClose(reply, text, failing);
}

bool RabbitMqBroker::restart() {
  // The user's broker is not idemproof's to restart (Session refuses restart faults with --amqp-url).
  if (!tag_.empty()) throw UsageError("--amqp-url: a restart fault needs the embedded RabbitMQ node");
  // The node is the command's, shared by every workspace: all of them see their connections drop. Its
  // durable queues and persistent messages come back; what was delivered and not acknowledged is ready again.
  node_->restart();
  reconnect();
  return true;
}

} // namespace idem::rabbitmq::client
