// The Kafka protocol's primitive types, on the byte strings the protocol guide gives and on round trips.
#include "brokers/kafka/api.h"
#include "brokers/kafka/wire.h"

#include <catch2/catch.hpp>

using namespace idem::kafka;

TEST_CASE("kafka wire: zig-zag varints and unsigned varints") {
  const std::vector<std::pair<int64_t, std::string>> known = {
      {0, std::string("\x00", 1)}, {-1, "\x01"}, {1, "\x02"}, {-64, "\x7f"}, {64, "\x80\x01"}, {150, "\xac\x02"}};
  for (const auto& [v, bytes] : known) {
    INFO(v);
    Writer w;
    w.varlong(v);
    CHECK(w.out == bytes);
    Reader r(bytes);
    CHECK(r.varlong() == v);
    CHECK(!r.failed());
  }
  for (int64_t v : {int64_t(INT32_MIN), int64_t(INT32_MAX), int64_t(-300), int64_t(0)}) {
    Writer w;
    w.varint(static_cast<int32_t>(v));
    Reader r(w.out);
    CHECK(r.varint() == v);
  }
  Reader tooLong(std::string("\xff\xff\xff\xff\xff\x01", 6)); // 6 bytes: longer than an int32's 5
  tooLong.uvarint();
  CHECK(tooLong.failed());
}

TEST_CASE("kafka wire: classic and compact strings, nulls, and lengths that do not fit") {
  Writer w;
  w.string(std::string_view("ab"), false);
  w.string(std::nullopt, false);
  w.string(std::string_view("cd"), true);
  w.string(std::nullopt, true);
  CHECK(w.out == std::string("\x00\x02" "ab" "\xff\xff" "\x03" "cd" "\x00", 10));
  Reader r(w.out);
  CHECK(r.string(false) == std::optional<std::string_view>("ab"));
  CHECK(r.string(false) == std::nullopt);
  CHECK(r.string(true) == std::optional<std::string_view>("cd"));
  CHECK(r.string(true) == std::nullopt);
  CHECK(!r.failed());
  CHECK(r.left() == 0);

  Reader shortString(std::string("\x00\x05" "abc", 5));
  shortString.string(false);
  CHECK(shortString.failed());
  Reader negative(std::string("\xff\xfe", 2)); // -2: no such length
  negative.string(false);
  CHECK(negative.failed());
  Reader hugeArray(std::string("\x7f\xff\xff\xff", 4)); // more elements than bytes left
  hugeArray.arrayCount(false);
  CHECK(hugeArray.failed());
  Reader afterFailure(std::string("\x00", 1));
  afterFailure.int32();
  CHECK(afterFailure.int8() == 0);
  CHECK(afterFailure.failed());
}

TEST_CASE("kafka api: verbs, roles and header versions") {
  CHECK(apiVerb(api::kOffsetCommit) == "COMMIT_OFFSET");
  CHECK(apiVerb(api::kFetch) == "FETCH");
  CHECK(apiVerb(api::kEndTxn) == "END_TXN");
  CHECK(apiInfo(api::kMetadata).role == ApiRole::SetUp);
  CHECK(apiInfo(api::kFindCoordinator).role == ApiRole::SetUp);
  CHECK(apiInfo(api::kApiVersions).role == ApiRole::SetUp);
  CHECK(apiInfo(api::kHeartbeat).role == ApiRole::Step);
  CHECK(apiInfo(api::kShareFetch).role == ApiRole::Opaque);
  CHECK(apiInfo(api::kFetch).blocking);
  CHECK(apiInfo(api::kJoinGroup).blocking);
  CHECK(!apiInfo(api::kOffsetCommit).blocking);
  CHECK(requestHeaderVersion(apiInfo(api::kFetch), 11) == 1);
  CHECK(requestHeaderVersion(apiInfo(api::kFetch), 12) == 2);
  CHECK(responseHeaderVersion(apiInfo(api::kFetch), 12) == 1);
  CHECK(responseHeaderVersion(apiInfo(api::kApiVersions), 3) == 0); // always v0
  CHECK(requestHeaderVersion(apiInfo(api::kApiVersions), 3) == 2);
}
