#include "brokers/rabbitmq/wire.h"

#include <map>

namespace idem::rabbitmq {

namespace {

/// Reads the arguments of a method in order; any read past the end marks it short.
struct Reader {
  std::string_view b;
  size_t at = 0;
  bool shortOf = false;

  bool need(size_t n) {
    if (at + n > b.size()) shortOf = true;
    return !shortOf;
  }
  uint64_t be(size_t n) {
    if (!need(n)) return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
    at += n;
    return v;
  }
  uint8_t u8() { return static_cast<uint8_t>(be(1)); }
  uint16_t u16() { return static_cast<uint16_t>(be(2)); }
  uint32_t u32() { return static_cast<uint32_t>(be(4)); }
  uint64_t u64() { return be(8); }
  std::string str(size_t n) {
    if (!need(n)) return {};
    std::string s(b.substr(at, n));
    at += n;
    return s;
  }
  std::string shortstr() { return str(u8()); }
  std::string longstr() { return str(u32()); }
  void skip(size_t n) {
    if (need(n)) at += n;
  }
};

/// The size of a field value of `type` (RabbitMQ's field types, a superset of the specification's) at the
/// reader's position, the value's bytes skipped; false for a type it does not know.
bool skipValue(Reader& r, char type) {
  switch (type) {
  case 't': case 'b': case 'B': r.skip(1); return true;
  case 's': case 'u': r.skip(2); return true;
  case 'I': case 'i': case 'f': r.skip(4); return true;
  case 'l': case 'd': case 'T': r.skip(8); return true;
  case 'D': r.skip(5); return true;
  case 'S': case 'x': case 'A': case 'F': r.skip(r.u32()); return true;
  case 'V': return true;
  default: return false;
  }
}

/// The string value of `key` in the field table at the reader's position (its length read first).
std::string tableString(Reader& r, const std::string& key) {
  const uint32_t len = r.u32();
  if (!r.need(len)) return {};
  Reader t{r.b.substr(r.at, len)};
  r.at += len;
  std::string found;
  while (!t.shortOf && t.at < t.b.size()) {
    std::string k = t.shortstr();
    char type = static_cast<char>(t.u8());
    if (k == key && (type == 'S' || type == 'x')) {
      found = t.longstr();
      continue;
    }
    if (!skipValue(t, type)) break;
  }
  return found;
}

} // namespace

Framed readFrame(std::string_view buf, Frame& out, uint32_t maxPayload) {
  if (buf.size() < 7) return Framed::NeedMore;
  const auto type = static_cast<uint8_t>(buf[0]);
  if (type != 1 && type != 2 && type != 3 && type != 8) return Framed::Invalid;
  Reader r{buf};
  r.skip(1);
  out.type = type;
  out.channel = r.u16();
  const uint32_t size = r.u32();
  if (size > maxPayload) return Framed::Invalid;
  if (buf.size() < 8 + size_t(size)) return Framed::NeedMore;
  if (static_cast<unsigned char>(buf[7 + size]) != 0xCE) return Framed::Invalid;
  out.payload = buf.substr(7, size);
  out.size = 8 + size_t(size);
  return Framed::Whole;
}

std::optional<Method> readMethod(std::string_view payload) {
  using namespace methods;
  Reader r{payload};
  Method m;
  const uint16_t cls = r.u16(), mid = r.u16();
  m.id = methodId(cls, mid);
  switch (m.id) {
  case BasicConsume: {
    r.u16();
    m.queue = r.shortstr();
    m.consumerTag = r.shortstr();
    const uint8_t bits = r.u8();
    m.noAck = bits & 2;
    m.noWait = bits & 8;
    break;
  }
  case BasicConsumeOk: case BasicCancelOk: m.consumerTag = r.shortstr(); break;
  case BasicCancel:
    m.consumerTag = r.shortstr();
    m.noWait = r.u8() & 1;
    break;
  case BasicDeliver:
    m.consumerTag = r.shortstr();
    m.deliveryTag = r.u64();
    m.redelivered = r.u8() & 1;
    m.exchange = r.shortstr();
    m.routingKey = r.shortstr();
    break;
  case BasicGet:
    r.u16();
    m.queue = r.shortstr();
    m.noAck = r.u8() & 1;
    break;
  case BasicGetOk:
    m.deliveryTag = r.u64();
    m.redelivered = r.u8() & 1;
    m.exchange = r.shortstr();
    m.routingKey = r.shortstr();
    break;
  case BasicAck:
    m.deliveryTag = r.u64();
    m.multiple = r.u8() & 1;
    break;
  case BasicReject:
    m.deliveryTag = r.u64();
    m.requeue = r.u8() & 1;
    break;
  case BasicNack: {
    m.deliveryTag = r.u64();
    const uint8_t bits = r.u8();
    m.multiple = bits & 1;
    m.requeue = bits & 2;
    break;
  }
  case BasicRecover: case BasicRecoverAsync: m.requeue = r.u8() & 1; break;
  case BasicPublish:
    r.u16();
    m.exchange = r.shortstr();
    m.routingKey = r.shortstr();
    break;
  case QueueDeclare:
    r.u16();
    m.queue = r.shortstr();
    m.noWait = r.u8() & 16;
    break;
  case methodId(50, 20): // queue.bind
    r.u16();
    m.queue = r.shortstr();
    m.exchange = r.shortstr();
    m.routingKey = r.shortstr();
    m.noWait = r.u8() & 1;
    break;
  case methodId(50, 30): // queue.purge
    r.u16();
    m.queue = r.shortstr();
    m.noWait = r.u8() & 1;
    break;
  case methodId(50, 40): // queue.delete
    r.u16();
    m.queue = r.shortstr();
    m.noWait = r.u8() & 4;
    break;
  case methodId(40, 10): // exchange.declare
    r.u16();
    m.exchange = r.shortstr();
    r.shortstr();
    m.noWait = r.u8() & 16;
    break;
  case ConfirmSelect: m.noWait = r.u8() & 1; break;
  case ChannelClose: case ConnectionClose:
    m.replyCode = r.u16();
    m.replyText = r.shortstr();
    break;
  default: break;
  }
  if (r.shortOf) return std::nullopt;
  return m;
}

std::string verbOf(uint32_t id) {
  static const std::map<uint32_t, const char*> verbs{
      {methodId(10, 10), "CONNECTION_START"}, {methodId(10, 11), "CONNECTION_START_OK"},
      {methodId(10, 30), "CONNECTION_TUNE"}, {methodId(10, 31), "CONNECTION_TUNE_OK"},
      {methodId(10, 40), "CONNECTION_OPEN"}, {methodId(10, 41), "CONNECTION_OPEN_OK"},
      {methods::ConnectionClose, "CONNECTION_CLOSE"}, {methods::ConnectionCloseOk, "CONNECTION_CLOSE_OK"},
      {methods::ChannelOpen, "CHANNEL_OPEN"}, {methods::ChannelOpenOk, "CHANNEL_OPEN_OK"},
      {methodId(20, 20), "FLOW"}, {methodId(20, 21), "FLOW_OK"},
      {methods::ChannelClose, "CHANNEL_CLOSE"}, {methods::ChannelCloseOk, "CHANNEL_CLOSE_OK"},
      {methodId(40, 10), "EXCHANGE_DECLARE"}, {methodId(40, 20), "EXCHANGE_DELETE"},
      {methodId(40, 30), "EXCHANGE_BIND"}, {methodId(40, 40), "EXCHANGE_UNBIND"},
      {methods::QueueDeclare, "QUEUE_DECLARE"}, {methodId(50, 20), "QUEUE_BIND"}, {methodId(50, 30), "QUEUE_PURGE"},
      {methodId(50, 40), "QUEUE_DELETE"}, {methodId(50, 50), "QUEUE_UNBIND"},
      {methods::BasicQos, "QOS"}, {methods::BasicConsume, "CONSUME"}, {methods::BasicConsumeOk, "CONSUME_OK"},
      {methods::BasicCancel, "CANCEL"}, {methods::BasicCancelOk, "CANCEL_OK"}, {methods::BasicPublish, "PUBLISH"},
      {methods::BasicReturn, "RETURN"}, {methods::BasicDeliver, "DELIVER"}, {methods::BasicGet, "GET"},
      {methods::BasicGetOk, "GET_OK"}, {methods::BasicGetEmpty, "GET_EMPTY"}, {methods::BasicAck, "ACK"},
      {methods::BasicReject, "REJECT"}, {methods::BasicRecoverAsync, "RECOVER_ASYNC"},
      {methods::BasicRecover, "RECOVER"}, {methods::BasicRecoverOk, "RECOVER_OK"}, {methods::BasicNack, "NACK"},
      {methods::ConfirmSelect, "CONFIRM_SELECT"}, {methodId(85, 11), "CONFIRM_SELECT_OK"},
      {methods::TxSelect, "TX_SELECT"}, {methodId(90, 11), "TX_SELECT_OK"}, {methods::TxCommit, "TX_COMMIT"},
      {methodId(90, 21), "TX_COMMIT_OK"}, {methods::TxRollback, "TX_ROLLBACK"}, {methodId(90, 31), "TX_ROLLBACK_OK"}};
  if (auto it = verbs.find(id); it != verbs.end()) return it->second;
  return "M" + std::to_string(id >> 16) + "." + std::to_string(id & 0xFFFF);
}

bool answered(const Method& m) {
  const uint16_t cls = m.id >> 16, mid = m.id & 0xFFFF;
  if (m.noWait) return false;
  switch (cls) {
  case 20: return mid == 10 || mid == 20 || mid == 40; // channel.open, flow, close
  case 40: case 50: return mid % 10 == 0 && mid != 0;  // exchange.* and queue.* requests
  case 60: return mid == 10 || mid == 20 || mid == 30 || mid == 70 || mid == 110; // qos consume cancel get recover
  case 85: return mid == 10;
  case 90: return mid == 10 || mid == 20 || mid == 30;
  default: return false;
  }
}

std::optional<ContentHeader> readContentHeader(std::string_view payload) {
  Reader r{payload};
  ContentHeader h;
  r.u16(); // class
  r.u16(); // weight
  h.bodySize = r.u64();
  std::vector<uint16_t> flags{r.u16()};
  while ((flags.back() & 1) && !r.shortOf) flags.push_back(r.u16());
  const uint16_t f = flags.front();
  auto has = [&](int bit) { return (f >> bit) & 1; };
  if (has(15)) r.shortstr();                        // content-type
  if (has(14)) r.shortstr();                        // content-encoding
  if (has(13)) h.eventId = tableString(r, "event_id"); // headers
  if (has(12)) r.u8();                              // delivery-mode
  if (has(11)) r.u8();                              // priority
  if (has(10)) r.shortstr();                        // correlation-id
  if (has(9)) r.shortstr();                         // reply-to
  if (has(8)) r.shortstr();                         // expiration
  if (has(7)) h.messageId = r.shortstr();           // message-id
  if (r.shortOf) return std::nullopt;
  return h;
}

std::string connectionClose(uint16_t code, const std::string& text, uint32_t failing) {
  auto be16 = [](std::string& out, uint32_t v) {
    out += static_cast<char>((v >> 8) & 0xFF);
    out += static_cast<char>(v & 0xFF);
  };
  std::string payload;
  be16(payload, 10);
  be16(payload, 50);
  be16(payload, code);
  const std::string t = text.substr(0, 255);
  payload += static_cast<char>(t.size());
  payload += t;
  be16(payload, failing >> 16);
  be16(payload, failing & 0xFFFF);
  std::string frame{char(1), char(0), char(0)};
  const auto n = static_cast<uint32_t>(payload.size());
  for (int shift = 24; shift >= 0; shift -= 8) frame += static_cast<char>((n >> shift) & 0xFF);
  frame += payload;
  frame += static_cast<char>(0xCE);
  return frame;
}

} // namespace idem::rabbitmq
