#pragma once
/// Test-side builders of Kafka frames: request and response headers by version, record batches, and
/// captures made of frames, for the tracker tests that need versions no recorded client speaks
/// (flexible versions: the embedded broker answers classic ones only).
#include "brokers/kafka/api.h"
#include "brokers/kafka/wire.h"
#include "replay.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace idem::kafka::test {

/// A request frame: header (v1 or v2 by the key's flexible versions; client id "c1") then `body`.
inline std::string request(int16_t key, int16_t version, int32_t correlation, const std::string& body) {
  const ApiInfo a = apiInfo(key);
  Writer w;
  w.int16(key);
  w.int16(version);
  w.int32(correlation);
  w.string(std::string_view("c1"), false);
  if (requestHeaderVersion(a, version) >= 2)
    w.noTags();
  w.raw(body);
  return framed(w.out);
}

/// A response frame: header (v1 with tagged fields for flexible versions, except ApiVersions) then `body`.
inline std::string response(int16_t key, int16_t version, int32_t correlation, const std::string& body) {
  Writer w;
  w.int32(correlation);
  if (responseHeaderVersion(apiInfo(key), version) >= 1)
    w.noTags();
  w.raw(body);
  return framed(w.out);
}

/// One record of a batch.
struct TestRecord {
  std::optional<std::string> key, value;
  std::vector<std::pair<std::string, std::string>> headers;
};

/// The records section of a batch (before compression).
inline std::string recordsSection(const std::vector<TestRecord>& records) {
  Writer all;
  for (size_t i = 0; i < records.size(); ++i) {
    const TestRecord& r = records[i];
    Writer w;
    w.int8(0);                           // attributes
    w.varlong(0);                        // timestampDelta
    w.varint(static_cast<int32_t>(i));   // offsetDelta
    w.varint(r.key ? static_cast<int32_t>(r.key->size()) : -1);
    if (r.key) w.raw(*r.key);
    w.varint(r.value ? static_cast<int32_t>(r.value->size()) : -1);
    if (r.value) w.raw(*r.value);
    w.varint(static_cast<int32_t>(r.headers.size()));
    for (const auto& [k, v] : r.headers) {
      w.varint(static_cast<int32_t>(k.size()));
      w.raw(k);
      w.varint(static_cast<int32_t>(v.size()));
      w.raw(v);
    }
    all.varint(static_cast<int32_t>(w.out.size()));
    all.raw(w.out);
  }
  return all.out;
}

/// A record batch (magic 2) at `baseOffset` holding `count` records whose (compressed) section is
/// `section`; `attributes` carries the codec (& 7), transactional (0x10) and control (0x20) bits.
inline std::string batch(int64_t baseOffset, int32_t count, const std::string& section, int16_t attributes = 0,
                         int64_t producerId = -1) {
  Writer rest; // everything after batchLength
  rest.int32(0);          // partitionLeaderEpoch
  rest.int8(2);           // magic
  rest.int32(0);          // crc (not checked by the tracker)
  rest.int16(attributes);
  rest.int32(count - 1);  // lastOffsetDelta
  rest.int64(0);          // baseTimestamp
  rest.int64(0);          // maxTimestamp
  rest.int64(producerId);
  rest.int16(0);          // producerEpoch
  rest.int32(-1);         // baseSequence
  rest.int32(count);
  rest.raw(section);
  Writer w;
  w.int64(baseOffset);
  w.int32(static_cast<int32_t>(rest.out.size()));
  w.raw(rest.out);
  return w.out;
}

/// A wallet event as a record: key the wallet, value the JSON fields, header event_id.
inline TestRecord walletRecord(int n, const std::string& wallet) {
  const std::string id = "e-" + std::to_string(n);
  return TestRecord{wallet,
                    "{\"n\":\"" + std::to_string(n) + "\",\"event_id\":\"" + id + "\",\"wallet\":\"" + wallet +
                        "\",\"amount\":\"5000\"}",
                    {{"event_id", id}}};
}

/// A capture of whole frames: the client's, then the server's, each its own chunk.
inline std::vector<proxy::test::Chunk> chunks(const std::vector<std::string>& client,
                                              const std::vector<std::string>& server) {
  std::vector<proxy::test::Chunk> out;
  for (const auto& c : client) out.push_back({true, c});
  for (const auto& s : server) out.push_back({false, s});
  return out;
}

} // namespace idem::kafka::test
