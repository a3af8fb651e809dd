#pragma once
/// Kafka's on-the-wire record formats, as a Fetch response (or a Produce request) carries them: record
/// batches (magic 2) and the legacy message sets (magic 0 and 1). Uncompressed and gzip batches are
/// decoded; a batch compressed with snappy, lz4 or zstd is recognised and named, not decoded. Pure.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem::kafka {

struct Record {
  int64_t offset = 0;
  std::optional<std::string> key, value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
  int64_t producerId = -1;    ///< of its batch (-1: none)
  bool transactional = false; ///< its batch is part of a transaction
  /// A control record (a transaction's commit or abort marker): never handed to an application.
  bool control = false;
  bool abortMarker = false;   ///< control: the marker of an aborted transaction
};

struct RecordSet {
  std::vector<Record> records; ///< in offset order, control records included
  size_t batches = 0;
  /// Non-empty when a batch could not be decoded: what and where ("an lz4-compressed batch at offset 17").
  /// The records before it are kept.
  std::string undecoded;
  /// Bytes of a partial batch at the end (a broker cuts the last batch at the fetch size limit: the client
  /// discards it and fetches it again). Not an error.
  size_t partial = 0;
};

/// Decodes a "records" field. Never fails: what it cannot decode it names in `undecoded`.
RecordSet decodeRecords(std::string_view bytes);

/// A transaction aborted in a partition: the producer and the first offset of its records.
struct AbortedTxn {
  int64_t producerId = 0;
  int64_t firstOffset = 0;
};

/// The records a consumer's client hands to its application: from `fetchOffset` on, no control records,
/// and (when the broker listed aborted transactions, as it does for read_committed) none of an aborted
/// transaction — as the Java client and librdkafka filter them.
std::vector<Record> deliverable(const RecordSet& set, int64_t fetchOffset, const std::vector<AbortedTxn>& aborted);

/// "none", "gzip", "snappy", "lz4", "zstd" for a batch's attributes & 7.
const char* compressionName(int codec);

} // namespace idem::kafka
