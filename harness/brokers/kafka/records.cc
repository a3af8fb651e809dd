#include "brokers/kafka/records.h"

#include "brokers/kafka/wire.h"

#include <zlib.h>

#include <algorithm>
#include <set>

namespace idem::kafka {
namespace {

/// A gzip stream inflated larger than this is not decoded (a batch of a consumer's topic is far smaller).
constexpr size_t kMaxInflated = 64 << 20;

std::optional<std::string> gunzip(std::string_view in) {
  z_stream z{};
  if (inflateInit2(&z, 32 + MAX_WBITS) != Z_OK)
    return std::nullopt;
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  char buf[16384];
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
    if (out.size() > kMaxInflated || (rc == Z_BUF_ERROR && z.avail_in == 0))
      break;
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END)
    return std::nullopt;
  return out;
}

std::optional<std::string> optionalBytes(Reader& r, int32_t len) {
  if (len < 0)
    return std::nullopt;
  return std::string(r.take(static_cast<size_t>(len)));
}

/// The records of one batch's (decompressed) record section.
bool readBatchRecords(std::string_view data, int32_t count, int64_t baseOffset, const Record& proto,
                      std::vector<Record>& out) {
  Reader r(data);
  for (int32_t i = 0; i < count; ++i) {
    const int32_t length = r.varint();
    if (r.failed() || length < 0 || static_cast<size_t>(length) > r.left())
      return false;
    Reader rec(r.take(static_cast<size_t>(length)));
    Record x = proto;
    rec.int8(); // attributes (unused)
    rec.varlong(); // timestampDelta
    x.offset = baseOffset + rec.varint();
    x.key = optionalBytes(rec, rec.varint());
    x.value = optionalBytes(rec, rec.varint());
    const int32_t headers = rec.varint();
    if (headers < 0 || static_cast<size_t>(headers) > rec.left())
      return false;
    for (int32_t h = 0; h < headers && !rec.failed(); ++h) {
      const int32_t klen = rec.varint();
      if (klen < 0)
        return false;
      std::string k(rec.take(static_cast<size_t>(klen)));
      x.headers.emplace_back(std::move(k), optionalBytes(rec, rec.varint()));
    }
    if (rec.failed() || rec.left() != 0)
      return false;
    if (x.control && x.key && x.key->size() >= 4) // key: version int16, type int16 (0 abort, 1 commit)
      x.abortMarker = (*x.key)[2] == 0 && (*x.key)[3] == 0;
    out.push_back(std::move(x));
  }
  return r.left() == 0;
}

/// One batch of magic 2 (`b` holds all of it). False with `why` set when it can't be decoded.
bool readBatch(std::string_view b, RecordSet& set, std::string& why) {
  Reader r(b);
  const int64_t baseOffset = r.int64();
  r.int32(); // batchLength
  r.int32(); // partitionLeaderEpoch
  r.int8();  // magic
  r.int32(); // crc
  const int16_t attributes = r.int16();
  r.int32(); // lastOffsetDelta
  r.int64(); // baseTimestamp
  r.int64(); // maxTimestamp
  Record proto;
  proto.producerId = r.int64();
  r.int16(); // producerEpoch
  r.int32(); // baseSequence
  const int32_t count = r.int32();
  proto.transactional = attributes & 0x10;
  proto.control = attributes & 0x20;
  const int codec = attributes & 7;
  std::string_view data = r.rest();
  if (r.failed() || count < 0) {
    why = "a malformed batch at offset " + std::to_string(baseOffset);
    return false;
  }
  std::optional<std::string> inflated;
  if (codec == 1) {
    inflated = gunzip(data);
    if (!inflated) {
      why = "a gzip batch that does not inflate at offset " + std::to_string(baseOffset);
      return false;
    }
    data = *inflated;
  } else if (codec != 0) {
    why = std::string("a ") + compressionName(codec) + "-compressed batch at offset " + std::to_string(baseOffset);
    return false;
  }
  if (!readBatchRecords(data, count, baseOffset, proto, set.records)) {
    why = "a malformed batch at offset " + std::to_string(baseOffset);
    return false;
  }
  return true;
}

/// One legacy message (magic 0 or 1), uncompressed.
bool readLegacy(std::string_view m, RecordSet& set, std::string& why) {
  Reader r(m);
  Record x;
  x.offset = r.int64();
  r.int32(); // message size
  r.int32(); // crc
  const int8_t magic = r.int8();
  const int8_t attributes = r.int8();
  if (magic == 1)
    r.int64(); // timestamp
  if (attributes & 7) {
    why = std::string("a ") + compressionName(attributes & 7) + "-compressed message set at offset " +
          std::to_string(x.offset);
    return false;
  }
  x.key = optionalBytes(r, r.int32());
  x.value = optionalBytes(r, r.int32());
  if (r.failed() || r.left() != 0) {
    why = "a malformed message at offset " + std::to_string(x.offset);
    return false;
  }
  set.records.push_back(std::move(x));
  return true;
}

} // namespace

const char* compressionName(int codec) {
  switch (codec) {
  case 0: return "none";
  case 1: return "gzip";
  case 2: return "snappy";
  case 3: return "lz4";
  case 4: return "zstd";
  default: return "unknown";
  }
}

RecordSet decodeRecords(std::string_view bytes) {
  RecordSet set;
  size_t pos = 0;
  // Both formats start with offset int64, size int32 (what follows it), and have the magic byte at 16.
  while (pos < bytes.size()) {
    const std::string_view rest = bytes.substr(pos);
    Reader head(rest);
    head.int64();
    const int32_t size = head.int32();
    if (head.failed() || rest.size() < 17 || size < 0 || static_cast<size_t>(size) > rest.size() - 12) {
      set.partial = rest.size();
      break;
    }
    const std::string_view one = rest.substr(0, 12 + static_cast<size_t>(size));
    const int magic = static_cast<int8_t>(rest[16]);
    const bool ok = magic == 2   ? readBatch(one, set, set.undecoded)
                    : magic >= 0 && magic < 2 ? readLegacy(one, set, set.undecoded)
                                              : false;
    if (!ok) {
      if (set.undecoded.empty())
        set.undecoded = "a batch of unknown format (magic " + std::to_string(magic) + ")";
      break;
    }
    ++set.batches;
    pos += one.size();
  }
  return set;
}

std::vector<Record> deliverable(const RecordSet& set, int64_t fetchOffset, const std::vector<AbortedTxn>& aborted) {
  std::vector<AbortedTxn> pending = aborted;
  std::sort(pending.begin(), pending.end(),
            [](const AbortedTxn& a, const AbortedTxn& b) { return a.firstOffset < b.firstOffset; });
  std::set<int64_t> abortedNow; // producers whose aborted transaction has begun and not ended yet
  size_t next = 0;
  std::vector<Record> out;
  for (const Record& r : set.records) {
    while (next < pending.size() && pending[next].firstOffset <= r.offset)
      abortedNow.insert(pending[next++].producerId);
    if (r.control) {
      if (r.abortMarker)
        abortedNow.erase(r.producerId);
      continue;
    }
    if (r.offset < fetchOffset || (r.transactional && abortedNow.count(r.producerId)))
      continue;
    out.push_back(r);
  }
  return out;
}

} // namespace idem::kafka
