#pragma once
/// The layouts of the Kafka messages the tracker decodes, per version, as data: each message is a list of
/// fields (type, the versions it exists in, a role saying what it means to the tracker, nested fields),
/// transcribed from Apache Kafka's JSON message specs (clients/src/main/resources/common/message, 3.9) the
/// way Envoy's Kafka filter generates its codecs from them. One walker (walk.h) reads every message.
#include <cstdint>
#include <span>

namespace idem::kafka {

enum class Ty : uint8_t {
  Bool, Int8, Int16, Int32, Int64, Uuid, Float64,
  String, Bytes, Records,            ///< nullable everywhere they may be
  Struct,                            ///< one nested struct (`fields`)
  Array,                             ///< an array of structs (`fields`)
  Int32Array, Int64Array, StringArray,
};

/// What a field means to the tracker; None for the rest.
enum class Role : uint8_t {
  None,
  // scalars and strings
  Topic, TopicId, Partition, ErrorCode, Offset, HighWatermark, Timestamp, Records, NodeId, Host, Port,
  Group, Member, Generation, Leader, ProtocolName, Assignment, MaxWait, Acks, TxnId, ProducerId, Committed,
  ApiKey, MaxVersion, AbortedProducer, AbortedFirstOffset,
  // arrays (reported by enter/leave)
  Topics, Partitions, Forgotten, Aborted, Brokers, Coordinators, ApiKeys, Groups, Members,
};

inline constexpr int8_t kAny = 127; ///< "and every later version"

struct Field {
  Ty ty = Ty::Int32;
  int8_t from = 0, to = kAny; ///< the versions that have it
  Role role = Role::None;
  int8_t tag = -1;            ///< >= 0: a tagged field (flexible versions only), by its tag
  std::span<const Field> fields{};

  constexpr bool in(int version) const { return version >= from && version <= to; }
};

/// The body layout (after the header) of API `key`'s request or response; empty when not decoded.
std::span<const Field> requestSchema(int16_t key);
std::span<const Field> responseSchema(int16_t key);

} // namespace idem::kafka
