#pragma once
/// AMQP 0-9-1 on the wire (the specification's "General Frame Format" and "Method Frames"): the protocol
/// header, frames, the methods the tracker names, and a content header's properties. Pure functions of
/// bytes; nothing here keeps state.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idem::rabbitmq {

/// The 8 bytes a client sends first: "AMQP" 0 0 9 1.
inline constexpr std::string_view kProtocolHeader{"AMQP\0\0\x09\x01", 8};

enum class FrameType : uint8_t { Method = 1, Header = 2, Body = 3, Heartbeat = 8 };

/// One whole frame at the start of a buffer.
struct Frame {
  uint8_t type = 0;
  uint16_t channel = 0;
  std::string_view payload; ///< into the buffer
  size_t size = 0;          ///< the frame's bytes: 7 + payload + the frame-end octet
};

enum class Framed { Whole, NeedMore, Invalid };

/// The frame at the start of `buf`. Invalid: an unknown type, a missing frame-end octet (0xCE), a payload
/// larger than `maxPayload`.
Framed readFrame(std::string_view buf, Frame& out, uint32_t maxPayload = 256u << 20);

/// class id << 16 | method id.
constexpr uint32_t methodId(uint16_t cls, uint16_t method) { return (uint32_t(cls) << 16) | method; }

namespace methods {
inline constexpr uint32_t ConnectionClose = methodId(10, 50), ConnectionCloseOk = methodId(10, 51);
inline constexpr uint32_t ChannelOpen = methodId(20, 10), ChannelOpenOk = methodId(20, 11);
inline constexpr uint32_t ChannelClose = methodId(20, 40), ChannelCloseOk = methodId(20, 41);
inline constexpr uint32_t QueueDeclare = methodId(50, 10);
inline constexpr uint32_t BasicQos = methodId(60, 10), BasicConsume = methodId(60, 20), BasicConsumeOk = methodId(60, 21);
inline constexpr uint32_t BasicCancel = methodId(60, 30), BasicCancelOk = methodId(60, 31);
inline constexpr uint32_t BasicPublish = methodId(60, 40), BasicReturn = methodId(60, 50);
inline constexpr uint32_t BasicDeliver = methodId(60, 60), BasicGet = methodId(60, 70);
inline constexpr uint32_t BasicGetOk = methodId(60, 71), BasicGetEmpty = methodId(60, 72);
inline constexpr uint32_t BasicAck = methodId(60, 80), BasicReject = methodId(60, 90);
inline constexpr uint32_t BasicRecoverAsync = methodId(60, 100), BasicRecover = methodId(60, 110);
inline constexpr uint32_t BasicRecoverOk = methodId(60, 111), BasicNack = methodId(60, 120);
inline constexpr uint32_t ConfirmSelect = methodId(85, 10);
inline constexpr uint32_t TxSelect = methodId(90, 10), TxCommit = methodId(90, 20), TxRollback = methodId(90, 30);
} // namespace methods

/// What one method frame carries that the tracker uses. Fields a method does not have stay empty.
struct Method {
  uint32_t id = 0;
  std::string consumerTag;
  uint64_t deliveryTag = 0;
  bool multiple = false;    ///< basic.ack, basic.nack
  bool requeue = false;     ///< basic.reject, basic.nack, basic.recover
  bool redelivered = false; ///< basic.deliver, basic.get-ok
  bool noAck = false;       ///< basic.consume, basic.get
  bool noWait = false;      ///< basic.consume, basic.cancel, queue.declare
  std::string queue;        ///< basic.consume, basic.get, queue.declare
  std::string exchange, routingKey;
  uint16_t replyCode = 0;   ///< channel.close, connection.close
  std::string replyText;
};

/// The method in a method frame's payload; nullopt when its arguments are cut short.
std::optional<Method> readMethod(std::string_view payload);

/// The verb of a method in steps: "ACK", "DELIVER", "QUEUE_DECLARE", ... ("CLASS.METHOD" numbers for one it
/// does not know: "M60.99").
std::string verbOf(uint32_t id);

/// Whether the server answers the method (a synchronous request of the specification), given its no-wait.
bool answered(const Method& m);

/// A content header frame's payload: the body size and the properties the tracker reads.
struct ContentHeader {
  uint64_t bodySize = 0;
  std::string messageId;
  std::string eventId; ///< the `event_id` entry of the headers table, when a string
};
std::optional<ContentHeader> readContentHeader(std::string_view payload);

/// A connection.close frame (channel 0) with `code` and `text`, naming `failing` (class << 16 | method) as
/// the method that caused it: what a broker sends when it ends a connection.
std::string connectionClose(uint16_t code, const std::string& text, uint32_t failing);

} // namespace idem::rabbitmq
