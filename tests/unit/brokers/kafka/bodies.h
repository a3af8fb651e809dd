#pragma once
/// Test-side message bodies, field by field as Apache Kafka's specs lay them out, for the versions the
/// tests need (see frames.h).
#include "frames.h"

#include <map>

namespace idem::kafka::test {

/// A partition of a Fetch: its index, the position asked from (request) or its records (response).
struct FetchPart {
  std::string topic;       ///< name (versions up to 12) or 16-byte id (13+)
  int32_t partition = 0;
  int64_t offset = 0;      ///< request: fetch offset
  std::string records;     ///< response
  int16_t error = 0;       ///< response
  std::vector<std::pair<int64_t, int64_t>> aborted; ///< response: (producer id, first offset)
};

/// Groups parts by topic, in first-seen order.
inline std::vector<std::pair<std::string, std::vector<FetchPart>>> byTopic(const std::vector<FetchPart>& parts) {
  std::vector<std::pair<std::string, std::vector<FetchPart>>> out;
  for (const auto& p : parts) {
    if (out.empty() || out.back().first != p.topic) out.push_back({p.topic, {}});
    out.back().second.push_back(p);
  }
  return out;
}

/// A Fetch topic: its name (versions up to 12) or its 16-byte id (13+).
inline void fetchTopic(Writer& w, int v, const std::string& topic, bool flex) {
  if (v >= 13) w.raw(topic); else w.string(std::string_view(topic), flex);
}

/// Fetch request, versions 4 to 17 (flexible from 12, topic ids from 13).
inline std::string fetchRequest(int v, const std::vector<FetchPart>& parts, int32_t maxWait = 500,
                                const std::vector<FetchPart>& forgotten = {}) {
  const bool flex = v >= 12;
  Writer w;
  if (v <= 14) w.int32(-1); // ReplicaId
  w.int32(maxWait);
  w.int32(1);               // MinBytes
  w.int32(1 << 20);         // MaxBytes
  w.int8(0);                // IsolationLevel
  if (v >= 7) { w.int32(0); w.int32(-1); } // SessionId, SessionEpoch
  const auto topics = byTopic(parts);
  w.arrayCount(topics.size(), flex);
  for (const auto& [topic, ps] : topics) {
    fetchTopic(w, v, topic, flex);
    w.arrayCount(ps.size(), flex);
    for (const auto& p : ps) {
      w.int32(p.partition);
      if (v >= 9) w.int32(-1);  // CurrentLeaderEpoch
      w.int64(p.offset);
      if (v >= 12) w.int32(-1); // LastFetchedEpoch
      if (v >= 5) w.int64(-1);  // LogStartOffset
      w.int32(1 << 20);         // PartitionMaxBytes
      if (flex) w.noTags();
    }
    if (flex) w.noTags();
  }
  if (v >= 7) {
    const auto gone = byTopic(forgotten);
    w.arrayCount(gone.size(), flex);
    for (const auto& [topic, ps] : gone) {
      fetchTopic(w, v, topic, flex);
      w.arrayCount(ps.size(), flex);
      for (const auto& p : ps) w.int32(p.partition);
      if (flex) w.noTags();
    }
  }
  if (v >= 11) w.string(std::string_view(""), flex); // RackId
  if (flex) w.noTags();
  return w.out;
}

/// A broker as NodeEndpoints, Metadata and FindCoordinator list it.
struct Broker {
  int32_t id = 1;
  std::string host = "127.0.0.1";
  int32_t port = 9092;
};

/// Fetch response, versions 4 to 17; `endpoints` (16+) as the tagged NodeEndpoints.
inline std::string fetchResponse(int v, const std::vector<FetchPart>& parts, const std::vector<Broker>& endpoints = {}) {
  const bool flex = v >= 12;
  Writer w;
  w.int32(0);                          // ThrottleTimeMs
  if (v >= 7) { w.int16(0); w.int32(0); } // ErrorCode, SessionId
  const auto topics = byTopic(parts);
  w.arrayCount(topics.size(), flex);
  for (const auto& [topic, ps] : topics) {
    fetchTopic(w, v, topic, flex);
    w.arrayCount(ps.size(), flex);
    for (const auto& p : ps) {
      w.int32(p.partition);
      w.int16(p.error);
      w.int64(100); // HighWatermark
      w.int64(100); // LastStableOffset
      if (v >= 5) w.int64(0); // LogStartOffset
      w.arrayCount(p.aborted.size(), flex);
      for (const auto& [pid, first] : p.aborted) {
        w.int64(pid);
        w.int64(first);
        if (flex) w.noTags();
      }
      if (v >= 11) w.int32(-1); // PreferredReadReplica
      w.bytes(std::string_view(p.records), flex);
      if (flex) w.noTags();
    }
    if (flex) w.noTags();
  }
  if (flex) {
    if (endpoints.empty() || v < 16) {
      w.noTags();
    } else {
      Writer e;
      e.arrayCount(endpoints.size(), true);
      for (const auto& b : endpoints) {
        e.int32(b.id);
        e.string(std::string_view(b.host), true);
        e.int32(b.port);
        e.string(std::nullopt, true); // Rack
        e.noTags();
      }
      w.uvarint(1); // one tagged field
      w.uvarint(0); // tag 0: NodeEndpoints
      w.uvarint(e.out.size());
      w.raw(e.out);
    }
  }
  return w.out;
}

/// Metadata response, versions 1 to 12: brokers, and one topic of `partitions` partitions with `topicId`
/// (10+).
inline std::string metadataResponse(int v, const std::vector<Broker>& brokers, const std::string& topic,
                                    const std::string& topicId = std::string(16, '\x11'), int partitions = 1) {
  const bool flex = v >= 9;
  Writer w;
  if (v >= 3) w.int32(0); // ThrottleTimeMs
  w.arrayCount(brokers.size(), flex);
  for (const auto& b : brokers) {
    w.int32(b.id);
    w.string(std::string_view(b.host), flex);
    w.int32(b.port);
    w.string(std::nullopt, flex); // Rack
    if (flex) w.noTags();
  }
  if (v >= 2) w.string(std::string_view("cluster"), flex);
  w.int32(brokers.empty() ? -1 : brokers[0].id); // ControllerId
  w.arrayCount(1, flex);
  w.int16(0);
  w.string(std::string_view(topic), flex);
  if (v >= 10) w.raw(topicId);
  w.int8(0); // IsInternal
  w.arrayCount(partitions, flex);
  for (int p = 0; p < partitions; ++p) {
    w.int16(0);
    w.int32(p);
    w.int32(brokers.empty() ? -1 : brokers[0].id);
    if (v >= 7) w.int32(0);
    w.arrayCount(0, flex);
    w.arrayCount(0, flex);
    if (v >= 5) w.arrayCount(0, flex);
    if (flex) w.noTags();
  }
  if (v >= 8) w.int32(0); // TopicAuthorizedOperations
  if (flex) w.noTags();
  if (v >= 8 && v <= 10) w.int32(0); // ClusterAuthorizedOperations
  if (flex) w.noTags();
  return w.out;
}

/// FindCoordinator response, versions 0 to 6 (a list of coordinators from 4).
inline std::string findCoordinatorResponse(int v, const Broker& b, const std::string& key = "g1") {
  const bool flex = v >= 3;
  Writer w;
  if (v >= 1) w.int32(0);
  if (v <= 3) {
    w.int16(0);
    if (v >= 1) w.string(std::nullopt, flex);
    w.int32(b.id);
    w.string(std::string_view(b.host), flex);
    w.int32(b.port);
  } else {
    w.arrayCount(1, true);
    w.string(std::string_view(key), true);
    w.int32(b.id);
    w.string(std::string_view(b.host), true);
    w.int32(b.port);
    w.int16(0);
    w.string(std::nullopt, true);
    w.noTags();
  }
  if (flex) w.noTags();
  return w.out;
}

/// OffsetCommit request, versions 2 to 9: one topic, offsets by partition.
inline std::string offsetCommitRequest(int v, const std::string& topic, const std::map<int32_t, int64_t>& offsets,
                                       const std::string& group = "g1", int32_t generation = 3,
                                       const std::string& member = "m-1") {
  const bool flex = v >= 8;
  Writer w;
  w.string(std::string_view(group), flex);
  w.int32(generation);
  w.string(std::string_view(member), flex);
  if (v >= 7) w.string(std::nullopt, flex); // GroupInstanceId
  if (v >= 2 && v <= 4) w.int64(-1);       // RetentionTimeMs
  w.arrayCount(1, flex);
  w.string(std::string_view(topic), flex);
  w.arrayCount(offsets.size(), flex);
  for (const auto& [p, o] : offsets) {
    w.int32(p);
    w.int64(o);
    if (v >= 6) w.int32(-1);
    w.string(std::string_view(""), flex);
    if (flex) w.noTags();
  }
  if (flex) w.noTags();
  if (flex) w.noTags();
  return w.out;
}

/// OffsetCommit response, versions 0 to 9: one topic, error codes by partition.
inline std::string offsetCommitResponse(int v, const std::string& topic, const std::map<int32_t, int16_t>& errors) {
  const bool flex = v >= 8;
  Writer w;
  if (v >= 3) w.int32(0); // ThrottleTimeMs
  w.arrayCount(1, flex);
  w.string(std::string_view(topic), flex);
  w.arrayCount(errors.size(), flex);
  for (const auto& [p, e] : errors) {
    w.int32(p);
    w.int16(e);
    if (flex) w.noTags();
  }
  if (flex) w.noTags();
  if (flex) w.noTags();
  return w.out;
}

} // namespace idem::kafka::test
