#include "brokers/rabbitmq/tracker.h"
#include "brokers/rabbitmq/wire.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace idem::rabbitmq {

namespace {

using proxy::ClientMsg;
using proxy::Decode;
using proxy::ServerMsg;

/// The body bytes kept to name a delivery's fields (a JSON object of strings); a larger body is passed
/// on all the same, its fields unread.
constexpr size_t kMaxBodyKept = 1 << 20;

/// A content (header and body frames) that follows a method on one channel.
struct Content {
  Method method;
  std::optional<ContentHeader> header;
  uint64_t got = 0;
  std::string body;
};

/// Set-up of a channel's session: a prefetch, a queue or exchange declared or bound, publisher confirms or
/// transactions chosen.
bool configures(uint32_t id) {
  using namespace methods;
  const uint32_t cls = id >> 16;
  return id == BasicQos || id == QueueDeclare || id == ConfirmSelect || id == TxSelect ||
         (cls == 40 && id != methodId(40, 20)) ||        // exchange declare, bind, unbind; not delete
         id == methodId(50, 20) || id == methodId(50, 50); // queue bind, unbind
}

proxy::EntryView entryOf(const Content& c, uint16_t channel) {
  proxy::EntryView e;
  e.id = c.header && !c.header->messageId.empty()
             ? c.header->messageId
             : "channel-" + std::to_string(channel) + "-tag-" + std::to_string(c.method.deliveryTag);
  bool hasEventId = false;
  const auto j = nlohmann::ordered_json::parse(c.body, nullptr, false);
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      e.fields.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
      hasEventId = hasEventId || k == "event_id";
    }
  }
  if (!hasEventId && c.header && !c.header->eventId.empty()) e.fields.emplace_back("event_id", c.header->eventId);
  return e;
}

class Tracker final : public AmqpTracker {
public:
  Decode onClient(std::string_view buf, ClientMsg& out) override {
    if (!started_) {
      // "AMQP" then the version, which the server judges (it answers its own header to one it refuses).
      const size_t n = std::min<size_t>(buf.size(), 4);
      if (buf.substr(0, n) != std::string_view("AMQP").substr(0, n)) return Decode::Invalid;
      if (buf.size() < kProtocolHeader.size()) return Decode::NeedMoreData;
      started_ = true;
      out.size = kProtocolHeader.size();
      out.kind = ClientMsg::Kind::Pass;
      return Decode::Message;
    }
    Frame f;
    if (auto r = readFrame(buf, f); r != Framed::Whole) return r == Framed::NeedMore ? Decode::NeedMoreData : Decode::Invalid;
    out.size = f.size;
    out.kind = ClientMsg::Kind::Pass;
    if (f.type == 1) return clientMethod(f, out);
    if (f.type == 2 || f.type == 3) return clientContent(f, out);
    return Decode::Message; // heartbeat
  }

  Decode onServer(std::string_view buf, ServerMsg& out) override {
    if (buf.size() >= 4 && buf.substr(0, 4) == "AMQP") { // the server refused our protocol version
      if (buf.size() < 8) return Decode::NeedMoreData;
      out.size = 8;
      return Decode::Message;
    }
    if (buf.size() < 4 && std::string_view("AMQP").substr(0, buf.size()) == buf) return Decode::NeedMoreData;
    Frame f;
    if (auto r = readFrame(buf, f); r != Framed::Whole) return r == Framed::NeedMore ? Decode::NeedMoreData : Decode::Invalid;
    out.size = f.size;
    out.kind = ServerMsg::Kind::Pass;
    if (f.type == 1) return serverMethod(f, out);
    if (f.type == 2 || f.type == 3) return serverContent(f, out);
    return Decode::Message;
  }

  void withdrawLast() override {
    if (lastAnswered_ && !outstanding_.empty()) outstanding_.pop_back();
    lastAnswered_ = false;
  }

  std::set<std::string> unacked() const override {
    const auto held = returnedAtEnd();
    return {held.begin(), held.end()};
  }
  bool settlesOnDelivery() const override { return noAckAsked_; }
  std::vector<std::string> returnedAtEnd() const override {
    std::vector<std::string> out;
    for (const auto& [ch, tags] : unacked_)
      for (const auto& [tag, entry] : tags) out.push_back(entry);
    for (const auto& [ch, pending] : tx_) // settled in a transaction the end rolls back
      for (const auto& a : pending) out.push_back(a.entry);
    return out;
  }

private:
  Decode clientMethod(const Frame& f, ClientMsg& out) {
    using namespace methods;
    auto m = readMethod(f.payload);
    if (!m) return Decode::Invalid;
    const std::string verb = verbOf(m->id);
    proxy::StepInfo step;
    step.verb = verb;
    step.detail = verb;
    switch (m->id) {
    case BasicPublish: // its content follows: the step ends with its last frame
      step.detail = "PUBLISH " + m->exchange + " " + m->routingKey;
      step.oneWay = true;
      clientContent_[f.channel] = ClientContent{step};
      out.kind = ClientMsg::Kind::Part;
      return Decode::Message;
    case BasicAck: case BasicNack: case BasicReject: {
      step.detail = verb + " " + std::to_string(m->deliveryTag) + (m->multiple ? " multiple" : "") +
                    (m->id != BasicAck && m->requeue ? " requeue" : "");
      const bool settles = m->id == BasicAck || !m->requeue; // a rejected entry not requeued is dropped for good
      auto& tags = unacked_[f.channel];
      // A delivery tag the channel does not hold (acknowledged already, or of a no-ack delivery) fails the
      // whole method, even a `multiple` one, and RabbitMQ closes the channel (406); it ignores what the
      // client sends on it until its close-ok. Nothing of these is acknowledged: the close hands it back.
      if (failing_.count(f.channel) || (!tags.count(m->deliveryTag) && !(m->multiple && m->deliveryTag == 0))) {
        failing_.insert(f.channel);
        step.detail += " (unknown delivery tag: the broker closes the channel)";
        step.oneWay = true;
        return end(step, out, false);
      }
      // In a channel transaction (tx.select) it takes effect at tx.commit, and is undone by tx.rollback.
      const auto tx = tx_.find(f.channel);
      for (auto it = tags.begin(); it != tags.end();) {
        const bool hit = it->first == m->deliveryTag || (m->multiple && (m->deliveryTag == 0 || it->first <= m->deliveryTag));
        if (!hit) {
          ++it;
          continue;
        }
        if (tx != tx_.end()) tx->second.push_back({it->first, it->second, settles, m->id != BasicAck});
        else (settles ? step.acked : step.returned).push_back(it->second);
        it = tags.erase(it);
      }
      if (tx != tx_.end()) step.detail += " (in a transaction: settled at its TX_COMMIT)";
      step.discards = m->id != BasicAck && !m->requeue && !step.acked.empty();
      step.oneWay = true;
      return end(step, out, false);
    }
    case TxSelect: tx_[f.channel]; break; // the channel's acknowledgements wait for tx.commit from here on
    case TxCommit: {
      // What the transaction acknowledged, rejected or handed back takes effect now.
      bool rejectsAll = true; // a step's settled entries are discarded, or acknowledged, all alike
      for (const auto& a : std::exchange(tx_[f.channel], {})) {
        (a.settles ? step.acked : step.returned).push_back(a.entry);
        if (a.settles) rejectsAll = rejectsAll && a.rejects;
      }
      step.discards = rejectsAll && !step.acked.empty();
      break;
    }
    case TxRollback: rollBack(f.channel); break;
    case BasicRecoverAsync:
      if (m->requeue) step.returned = takeUnacked(f.channel);
      step.oneWay = true;
      return end(step, out, false);
    case BasicRecover:
      if (m->requeue) step.returned = takeUnacked(f.channel);
      break;
    case BasicConsume:
      step.detail = "CONSUME " + m->queue + (m->noAck ? " no-ack" : "");
      consumeNoAck_[f.channel] = m->noAck;
      noAckAsked_ = noAckAsked_ || m->noAck;
      if (m->noWait && !m->consumerTag.empty()) consumers_[key(f.channel, m->consumerTag)] = m->noAck;
      break;
    case BasicGet:
      step.detail = "GET " + m->queue + (m->noAck ? " no-ack" : "");
      step.read = true;
      getNoAck_[f.channel] = m->noAck;
      noAckAsked_ = noAckAsked_ || m->noAck;
      break;
    case BasicCancel: consumers_.erase(key(f.channel, m->consumerTag)); break;
    case QueueDeclare: step.detail = "QUEUE_DECLARE " + m->queue; break;
    case ChannelClose: case ConnectionClose: {
      // The client ends the channel (or the connection) holding unacknowledged messages: the broker requeues
      // them. A step of its own that hands them back, so that a process whose channel is gone is not taken
      // for one still working on them; with nothing held, a close is set-up, as its open was.
      const int which = m->id == ChannelClose ? f.channel : kEveryChannel;
      step.returned = takeUnacked(which);
      endConsumers(which);
      if (step.returned.empty()) return Decode::Message;
      step.oneWay = true; // its close-ok answers nothing the client waits on as work
      return end(step, out, false);
    }
    case ChannelOpen: case ChannelCloseOk: failing_.erase(f.channel); return Decode::Message;
    case ConnectionCloseOk: return Decode::Message;
    default: break;
    }
    step.configures = configures(m->id);
    if ((m->id >> 16) == 10) return Decode::Message; // connection set-up
    if (!answered(*m)) {
      if ((m->id >> 16) == 20) return Decode::Message; // channel.flow-ok
      step.oneWay = true;
      return end(step, out, false);
    }
    return end(step, out, true, f.channel);
  }

  Decode clientContent(const Frame& f, ClientMsg& out) {
    auto it = clientContent_.find(f.channel);
    if (it == clientContent_.end()) return Decode::Invalid;
    auto& c = it->second;
    if (f.type == 2) {
      auto h = readContentHeader(f.payload);
      if (!h) return Decode::Invalid;
      c.size = h->bodySize;
      c.header = true;
    } else {
      if (!c.header) return Decode::Invalid;
      c.got += f.payload.size();
    }
    if (c.header && c.got >= c.size) {
      proxy::StepInfo step = std::move(c.step);
      clientContent_.erase(it);
      return end(step, out, false);
    }
    out.kind = ClientMsg::Kind::Part;
    return Decode::Message;
  }

  static constexpr int kEveryChannel = -1;
  /// The unacknowledged messages of `channel` (or of kEveryChannel), in delivery order, no longer held.
  std::vector<std::string> takeUnacked(int channel) {
    std::vector<std::string> out;
    // A channel that ends rolls its transaction back, and the transaction ends with it.
    for (auto it = tx_.begin(); it != tx_.end();) {
      if (channel != kEveryChannel && it->first != channel) {
        ++it;
        continue;
      }
      rollBack(it->first);
      it = tx_.erase(it);
    }
    for (auto it = unacked_.begin(); it != unacked_.end();) {
      if (channel != kEveryChannel && it->first != channel) {
        ++it;
        continue;
      }
      for (const auto& [tag, entry] : it->second) out.push_back(entry);
      it = unacked_.erase(it);
    }
    return out;
  }

  /// tx.rollback of `channel`: what its transaction settled is unacknowledged on the channel again.
  void rollBack(uint16_t channel) {
    for (const auto& a : std::exchange(tx_[channel], {})) unacked_[channel][a.tag] = a.entry;
  }

  /// The consumers of `channel` (or of kEveryChannel) end with it.
  void endConsumers(int channel) {
    const std::string prefix = channel != kEveryChannel ? std::to_string(channel) + "/" : "";
    for (auto it = consumers_.begin(); it != consumers_.end();)
      it = it->first.rfind(prefix, 0) == 0 ? consumers_.erase(it) : std::next(it);
  }

  Decode end(proxy::StepInfo& step, ClientMsg& out, bool answered, uint16_t channel = 0) {
    out.kind = ClientMsg::Kind::RequestEnd;
    out.step = std::move(step);
    lastAnswered_ = answered;
    if (answered) outstanding_.push_back({channel, out.step.verb});
    return Decode::Message;
  }

  Decode serverMethod(const Frame& f, ServerMsg& out) {
    using namespace methods;
    auto m = readMethod(f.payload);
    if (!m) return Decode::Invalid;
    const uint16_t cls = m->id >> 16, mid = m->id & 0xFFFF;
    switch (m->id) {
    case BasicDeliver: case BasicGetOk: case BasicReturn:
      serverContent_[f.channel] = Content{*m, std::nullopt, 0, {}};
      out.kind = m->id == BasicReturn ? ServerMsg::Kind::Pass : ServerMsg::Kind::Part;
      return Decode::Message;
    case BasicGetEmpty:
      out.reply.empty_read = true;
      out.reply.summary = "empty";
      return reply(out);
    case ChannelClose: case ConnectionClose: {
      // The server ends the channel (or the connection) after an error: the answer of a request waiting on it.
      // Its unacknowledged messages go back to the queue.
      const int which = m->id == ChannelClose ? f.channel : kEveryChannel;
      std::vector<std::string> back = takeUnacked(which);
      endConsumers(which);
      const bool waits = std::any_of(outstanding_.begin(), outstanding_.end(), [&](const Outstanding& o) {
        return m->id == ConnectionClose || o.channel == f.channel;
      });
      if (!waits && back.empty()) return Decode::Message;
      out.reply.error = true;
      out.reply.summary = std::to_string(m->replyCode) + " " + m->replyText;
      if (waits) { // the answer of the request, which hands the messages back with it
        out.reply.returned = std::move(back);
        return reply(out);
      }
      // Of itself (an ack the client sent with a delivery tag the channel does not know: 406): a step of the
      // server's that hands the messages back, so that no one counts them as the client's work any more.
      out.kind = ServerMsg::Kind::Push;
      out.step.verb = verbOf(m->id);
      out.step.detail = out.step.verb + " " + out.reply.summary;
      out.step.returned = std::move(back);
      out.reply.waiting = !consumers_.empty();
      return Decode::Message;
    }
    case ChannelOpenOk: case ChannelCloseOk: case ConnectionCloseOk: return Decode::Message;
    case BasicConsumeOk:
      consumers_[key(f.channel, m->consumerTag)] = consumeNoAck_[f.channel];
      break;
    case BasicCancelOk: consumers_.erase(key(f.channel, m->consumerTag)); break;
    default: break;
    }
    const bool isOk = (cls == 20 && mid == 21) || ((cls == 40 || cls == 50) && mid % 10 == 1) ||
                      (cls == 60 && (mid == 11 || mid == 21 || mid == 31 || mid == 111)) || (cls == 85 && mid == 11) ||
                      (cls == 90 && (mid == 11 || mid == 21 || mid == 31));
    if (!isOk || cls == 10) return Decode::Message; // pushes (confirms, cancel, flow, blocked) and set-up
    out.reply.summary = verbOf(m->id);
    return reply(out);
  }

  Decode serverContent(const Frame& f, ServerMsg& out) {
    auto it = serverContent_.find(f.channel);
    if (it == serverContent_.end()) return Decode::Invalid;
    auto& c = it->second;
    const bool returned = c.method.id == methods::BasicReturn;
    if (f.type == 2) {
      c.header = readContentHeader(f.payload);
      if (!c.header) return Decode::Invalid;
    } else {
      if (!c.header) return Decode::Invalid;
      c.got += f.payload.size();
      if (c.body.size() + f.payload.size() <= kMaxBodyKept) c.body.append(f.payload);
    }
    if (c.got < c.header->bodySize) {
      out.kind = returned ? ServerMsg::Kind::Pass : ServerMsg::Kind::Part;
      return Decode::Message;
    }
    Content done = std::move(c);
    serverContent_.erase(it);
    if (returned) return Decode::Message;
    auto entry = entryOf(done, f.channel);
    const auto& m = done.method;
    bool noAck = m.id == methods::BasicGetOk ? getNoAck_[f.channel] : consumers_[key(f.channel, m.consumerTag)];
    if (!noAck) unacked_[f.channel][m.deliveryTag] = entry.id;
    out.reply.summary = std::string("1 entry") + (m.redelivered ? " (redelivered)" : "");
    out.reply.delivered.push_back(std::move(entry));
    if (m.id == methods::BasicGetOk) return reply(out);
    out.kind = ServerMsg::Kind::Push;
    out.step.verb = "DELIVER";
    out.step.read = true;
    out.step.detail = "DELIVER " + m.consumerTag + " " + std::to_string(m.deliveryTag) + " " +
                      out.reply.delivered.front().id + (m.redelivered ? " redelivered" : "") + (noAck ? " no-ack" : "");
    // A consumer with no-ack (pika's auto_ack, amqplib's noAck) has the broker settle each message as it
    // delivers it: the delivery is its own acknowledgement, and a kill before the effect loses the message.
    if (noAck) out.step.acked.push_back(out.reply.delivered.front().id);
    out.reply.waiting = !consumers_.empty();
    return Decode::Message;
  }

  Decode reply(ServerMsg& out) {
    if (outstanding_.empty()) return Decode::Message; // nothing asked for it: pass it
    outstanding_.pop_front();
    out.kind = ServerMsg::Kind::ReplyEnd;
    out.reply.waiting = !consumers_.empty();
    return Decode::Message;
  }

  static std::string key(uint16_t channel, const std::string& tag) { return std::to_string(channel) + "/" + tag; }

  struct Outstanding {
    uint16_t channel = 0;
    std::string verb;
  };
  /// A publish on one channel whose content is still coming.
  struct ClientContent {
    proxy::StepInfo step;
    uint64_t got = 0;
    uint64_t size = 0;
    bool header = false;
  };

  bool started_ = false;
  bool lastAnswered_ = false;
  std::deque<Outstanding> outstanding_;
  std::map<uint16_t, std::map<uint64_t, std::string>> unacked_; ///< channel -> delivery tag -> entry
  std::map<std::string, bool> consumers_;                       ///< "channel/tag" -> no-ack
  std::map<uint16_t, bool> consumeNoAck_, getNoAck_;            ///< of the latest consume / get per channel
  std::set<uint16_t> failing_; ///< channels an ack of an unknown delivery tag failed, until the client's close-ok
  /// A message a channel transaction acknowledged (or rejected, or nacked) that waits for its tx.commit.
  struct TxSettle {
    uint64_t tag = 0;
    std::string entry;
    bool settles = false; ///< an ack, or a reject or nack without requeue (else it is handed back)
    bool rejects = false; ///< a reject or nack
  };
  std::map<uint16_t, std::vector<TxSettle>> tx_; ///< channels in transaction mode (tx.select) -> what waits
  bool noAckAsked_ = false;                                     ///< any consume or get with no-ack
  std::map<uint16_t, ClientContent> clientContent_;
  std::map<uint16_t, Content> serverContent_;
};

} // namespace

std::unique_ptr<AmqpTracker> makeTracker() { return std::make_unique<Tracker>(); }

} // namespace idem::rabbitmq
