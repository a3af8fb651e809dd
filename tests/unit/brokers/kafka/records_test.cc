// Record batches and legacy message sets as a Fetch answer carries them, and how a record reads as a
// delivered entry.
#include "bodies.h"

#include "brokers/kafka/delivery.h"
#include "brokers/kafka/records.h"

#include <catch2/catch.hpp>

#include <zlib.h>

using namespace idem::kafka;
using namespace idem::kafka::test;
using Fields = std::vector<std::pair<std::string, std::string>>;

namespace {

std::string gzip(const std::string& in) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, in.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::vector<int64_t> offsets(const std::vector<Record>& rs) {
  std::vector<int64_t> out;
  for (const auto& r : rs) out.push_back(r.offset);
  return out;
}

} // namespace

TEST_CASE("kafka records: an uncompressed and a gzip batch, keys, values and headers") {
  const std::string section = recordsSection({walletRecord(1, "w1"), walletRecord(2, "w2")});
  const RecordSet set = decodeRecords(batch(10, 2, section) + batch(12, 2, gzip(section), 1));
  CHECK(set.undecoded.empty());
  CHECK(set.batches == 2);
  CHECK(offsets(set.records) == std::vector<int64_t>{10, 11, 12, 13});
  CHECK(set.records[3].key == std::optional<std::string>("w2"));
  CHECK(set.records[3].headers == std::vector<std::pair<std::string, std::optional<std::string>>>{{"event_id", "e-2"}});
}

TEST_CASE("kafka records: a batch cut short at the end is partial, not an error") {
  const std::string one = batch(0, 1, recordsSection({walletRecord(1, "w1")}));
  const std::string two = one + one.substr(0, one.size() - 3);
  const RecordSet set = decodeRecords(two);
  CHECK(set.undecoded.empty());
  CHECK(set.records.size() == 1);
  CHECK(set.partial == one.size() - 3);
  CHECK(decodeRecords(one.substr(0, 10)).partial == 10);
}

TEST_CASE("kafka records: snappy, lz4 and zstd batches are named, not decoded, the records before them kept") {
  const std::string plain = batch(0, 1, recordsSection({walletRecord(1, "w1")}));
  for (int codec : {2, 3, 4}) {
    INFO(compressionName(codec));
    const RecordSet set = decodeRecords(plain + batch(1, 1, "compressed", static_cast<int16_t>(codec)));
    CHECK(set.records.size() == 1);
    CHECK(set.undecoded == std::string("a ") + compressionName(codec) + "-compressed batch at offset 1");
  }
  CHECK(decodeRecords(batch(0, 1, "not gzip", 1)).undecoded == "a gzip batch that does not inflate at offset 0");
  CHECK(decodeRecords(batch(0, 2, recordsSection({walletRecord(1, "w1")}))).undecoded ==
        "a malformed batch at offset 0");
}

TEST_CASE("kafka records: legacy message sets (magic 0 and 1), uncompressed") {
  const auto message = [](int64_t offset, int8_t magic, const std::string& key, const std::string& value) {
    Writer body;
    body.int32(0); // crc
    body.int8(magic);
    body.int8(0);  // attributes
    if (magic == 1) body.int64(0);
    body.bytes(std::string_view(key), false);
    body.bytes(std::string_view(value), false);
    Writer w;
    w.int64(offset);
    w.int32(static_cast<int32_t>(body.out.size()));
    w.raw(body.out);
    return w.out;
  };
  const RecordSet set = decodeRecords(message(4, 0, "w1", "{\"n\":\"1\"}") + message(5, 1, "w2", "{\"n\":\"2\"}"));
  CHECK(set.undecoded.empty());
  CHECK(offsets(set.records) == std::vector<int64_t>{4, 5});
  CHECK(set.records[1].value == std::optional<std::string>("{\"n\":\"2\"}"));
}

TEST_CASE("kafka records: what a client delivers — from its position on, no control records") {
  const TestRecord commitMarker{std::string("\x00\x00\x00\x01", 4), std::string(6, '\0'), {}};
  const RecordSet set = decodeRecords(batch(0, 2, recordsSection({walletRecord(1, "w1"), walletRecord(2, "w1")}), 0x10, 9) +
                                      batch(2, 1, recordsSection({commitMarker}), 0x30, 9));
  REQUIRE(set.records.size() == 3);
  CHECK(set.records[2].control);
  CHECK(!set.records[2].abortMarker);
  CHECK(offsets(deliverable(set, 0, {})) == std::vector<int64_t>{0, 1}); // committed: both
  CHECK(offsets(deliverable(set, 1, {})) == std::vector<int64_t>{1});
}

TEST_CASE("kafka delivery: the entry a record is — its position, its JSON fields, the event_id header") {
  Delivery d{"payments", 2, Record{}};
  d.record.offset = 17;
  d.record.value = R"({"n":"1","event_id":"e-1","amount":5000,"note":null})";
  d.record.headers = {{"event_id", "e-1"}};
  idem::proxy::EntryView e = entryOf(d);
  CHECK(e.id == "payments-2@17");
  CHECK(e.fields == Fields{{"n", "1"}, {"event_id", "e-1"}, {"amount", "5000"}, {"note", "null"}});
  d.record.value = R"({"n":"1"})"; // no event_id field: the header gives it
  CHECK(entryOf(d).fields == Fields{{"n", "1"}, {"event_id", "e-1"}});
  d.record.value = "not json";
  CHECK(entryOf(d).fields == Fields{{"event_id", "e-1"}});
  d.record.value.reset();
  d.record.headers.clear();
  CHECK(entryOf(d).fields.empty());
}
