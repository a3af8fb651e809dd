#include "brokers/kafka/answers.h"

#include "brokers/kafka/api.h"
#include "brokers/kafka/collector.h"
#include "brokers/kafka/wire.h"

#include <vector>

namespace idem::kafka {
namespace {

/// The request's topics and partitions, in order, as the response lists them back.
using Topics = std::vector<std::pair<std::string, std::vector<int32_t>>>;

Topics topicsOf(const Collector& c) {
  Topics out;
  for (const auto& i : c.items) {
    if (i.forgotten)
      continue;
    if (out.empty() || out.back().first != i.tp.topic)
      out.push_back({i.tp.topic, {}});
    out.back().second.push_back(i.tp.partition);
  }
  return out;
}

/// Writes a topic key: a name (string), or for one named by id its 16 bytes.
void topicField(Writer& w, const std::string& key, bool byId, bool flex) {
  if (byId)
    w.raw(key.size() == 17 ? std::string_view(key).substr(1) : std::string_view(std::string(16, '\0')));
  else
    w.string(std::string_view(key), flex);
}

/// Every requested partition of every requested topic, `perPartition` writing what follows its index.
template <class F>
void topicsArray(Writer& w, const Topics& topics, bool flex, bool byId, F perPartition) {
  w.arrayCount(topics.size(), flex);
  for (const auto& [topic, partitions] : topics) {
    topicField(w, topic, byId, flex);
    w.arrayCount(partitions.size(), flex);
    for (int32_t p : partitions) {
      w.int32(p);
      perPartition();
      if (flex) w.noTags();
    }
    if (flex) w.noTags();
  }
}

/// The body of the failed response of API `key` at `v`.
std::optional<std::string> body(int16_t key, int v, bool flex, const Collector& c, int16_t code) {
  Writer w;
  const Topics topics = topicsOf(c);
  const std::optional<std::string_view> none;
  switch (key) {
  case api::kOffsetCommit: case api::kTxnOffsetCommit:
    if (key == api::kTxnOffsetCommit || v >= 3) w.int32(0); // ThrottleTimeMs
    topicsArray(w, topics, flex, false, [&] { w.int16(code); });
    break;
  case api::kFetch:
    if (v >= 1) w.int32(0);
    if (v >= 7) { w.int16(code); w.int32(0); } // ErrorCode, SessionId
    topicsArray(w, topics, flex, v >= 13, [&] {
      w.int16(code);
      w.int64(-1); // HighWatermark
      if (v >= 4) w.int64(-1);
      if (v >= 5) w.int64(-1);
      if (v >= 4) w.arrayCount(0, flex); // AbortedTransactions
      if (v >= 11) w.int32(-1);
      w.bytes(none, flex); // Records
    });
    break;
  case api::kProduce:
    topicsArray(w, topics, flex, false, [&] {
      w.int16(code);
      w.int64(-1); // BaseOffset
      if (v >= 2) w.int64(-1);
      if (v >= 5) w.int64(-1);
      if (v >= 8) { w.arrayCount(0, flex); w.string(none, flex); }
    });
    if (v >= 1) w.int32(0);
    break;
  case api::kListOffsets:
    if (v >= 2) w.int32(0);
    topicsArray(w, topics, flex, false, [&] {
      w.int16(code);
      if (v == 0) w.arrayCount(0, flex);
      if (v >= 1) { w.int64(-1); w.int64(-1); }
      if (v >= 4) w.int32(-1);
    });
    break;
  case api::kOffsetFetch: {
    if (v >= 3) w.int32(0);
    const auto partitions = [&] {
      topicsArray(w, topics, flex, false, [&] {
        w.int64(-1); // CommittedOffset
        if (v >= 5) w.int32(-1);
        w.string(std::string_view(""), flex);
        w.int16(code);
      });
    };
    if (v <= 7) {
      partitions();
      if (v >= 2) w.int16(code);
    } else {
      w.arrayCount(1, flex);
      w.string(std::string_view(c.group.value_or("")), flex);
      partitions();
      w.int16(code);
      w.noTags();
    }
    break;
  }
  case api::kJoinGroup:
    if (v >= 2) w.int32(0);
    w.int16(code);
    w.int32(-1); // GenerationId
    if (v >= 7) w.string(none, flex);
    w.string(v >= 7 ? none : std::optional<std::string_view>(""), flex); // ProtocolName
    w.string(std::string_view(""), flex);                              // Leader
    if (v >= 9) w.int8(0);
    w.string(std::string_view(c.member.value_or("")), flex);
    w.arrayCount(0, flex);
    break;
  case api::kSyncGroup:
    if (v >= 1) w.int32(0);
    w.int16(code);
    if (v >= 5) { w.string(none, flex); w.string(none, flex); }
    w.bytes(std::string_view(""), flex);
    break;
  case api::kHeartbeat: case api::kAddOffsetsToTxn:
    if (key == api::kAddOffsetsToTxn || v >= 1) w.int32(0);
    w.int16(code);
    break;
  case api::kLeaveGroup:
    if (v >= 1) w.int32(0);
    w.int16(code);
    if (v >= 3) w.arrayCount(0, flex);
    break;
  case api::kInitProducerId:
    w.int32(0);
    w.int16(code);
    w.int64(-1);
    w.int16(-1);
    break;
  case api::kEndTxn:
    w.int32(0);
    w.int16(code);
    if (v >= 5) { w.int64(-1); w.int16(-1); }
    break;
  case api::kAddPartitionsToTxn:
    w.int32(0);
    if (v >= 4) {
      w.int16(code);
      w.arrayCount(0, flex);
    } else {
      topicsArray(w, topics, flex, false, [&] { w.int16(code); });
    }
    break;
  default:
    return std::nullopt;
  }
  if (flex)
    w.noTags();
  return w.out;
}

} // namespace

std::optional<std::string> errorResponse(std::string_view request, int16_t code) {
  if (request.size() < 12)
    return std::nullopt;
  Reader r(request.substr(4));
  const int16_t key = r.int16(), version = r.int16();
  const int32_t correlation = r.int32();
  const ApiInfo a = apiInfo(key);
  if (a.role != ApiRole::Step || version < 0 || version > a.maxVersion)
    return std::nullopt;
  r.string(false);
  const bool flex = isFlexible(a, version);
  if (requestHeaderVersion(a, version) >= 2)
    r.skipTags();
  TopicNames names;
  Collector c(names);
  if (r.failed() || !walk(r.rest(), requestSchema(key), version, flex, c))
    return std::nullopt;
  const auto b = body(key, version, flex, c, code);
  if (!b)
    return std::nullopt;
  Writer w;
  w.int32(correlation);
  if (responseHeaderVersion(a, version) >= 1)
    w.noTags();
  w.raw(*b);
  return framed(w.out);
}

std::string leaveGroupRequest(const Membership& m, int32_t correlation) {
  const int16_t v = m.leaveVersion;
  const ApiInfo a = apiInfo(api::kLeaveGroup);
  const bool flex = isFlexible(a, v);
  Writer w;
  w.int16(api::kLeaveGroup);
  w.int16(v);
  w.int32(correlation);
  w.string(std::string_view(m.clientId), false);
  if (flex) w.noTags();
  w.string(std::string_view(m.group), flex);
  if (v <= 2) {
    w.string(std::string_view(m.member), flex);
  } else {
    w.arrayCount(1, flex);
    w.string(std::string_view(m.member), flex);
    w.string(m.instance ? std::optional<std::string_view>(*m.instance) : std::nullopt, flex);
    if (v >= 5) w.string(std::string_view("the process was killed (idemproof)"), flex);
    if (flex) w.noTags();
  }
  if (flex) w.noTags();
  return framed(w.out);
}

} // namespace idem::kafka
