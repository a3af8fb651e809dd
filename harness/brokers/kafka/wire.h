#pragma once
/// The Kafka protocol's primitive types (https://kafka.apache.org/protocol#protocol_types): big-endian
/// integers, zig-zag varints, strings, bytes and arrays in their classic (int16/int32 length) and compact
/// (unsigned varint length + 1, "flexible versions") encodings, and tagged-field sections. Pure.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace idem::kafka {

/// Reads primitives off a byte view. A read past the end, a negative length other than -1 (null) or a
/// varint longer than its type sets failed() and returns a zero value; later reads fail too, so a caller
/// checks once at the end.
class Reader {
public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  int8_t int8();
  int16_t int16();
  int32_t int32();
  int64_t int64();
  uint32_t uvarint();  ///< unsigned LEB128, at most 5 bytes
  int32_t varint();    ///< zig-zag varint, at most 5 bytes
  int64_t varlong();   ///< zig-zag varlong, at most 10 bytes
  /// The next `n` bytes as a view (failed: empty).
  std::string_view take(size_t n);
  /// A length: classic (int16 or int32 by `wide`) or compact (uvarint N+1). nullopt for null (-1 or 0).
  std::optional<size_t> length(bool compact, bool wide);
  /// A string or bytes field: its length then the bytes. nullopt for null.
  std::optional<std::string_view> string(bool compact) { return bytesOf(length(compact, false)); }
  std::optional<std::string_view> bytes(bool compact) { return bytesOf(length(compact, true)); }
  /// An array's element count; nullopt for null. Counts beyond what the rest could hold fail.
  std::optional<size_t> arrayCount(bool compact);
  /// Skips a tagged-field section: a count, then per field its tag, its size and that many bytes.
  void skipTags();

  size_t pos() const { return pos_; }
  size_t left() const { return bytes_.size() - pos_; }
  bool failed() const { return failed_; }
  void fail() { failed_ = true; pos_ = bytes_.size(); }
  std::string_view rest() const { return bytes_.substr(pos_); }

private:
  std::optional<std::string_view> bytesOf(std::optional<size_t> n);
  uint64_t unsignedVarint(int maxBytes);

  std::string_view bytes_;
  size_t pos_ = 0;
  bool failed_ = false;
};

/// Appends primitives to a string, in the encodings Reader reads.
class Writer {
public:
  std::string out;

  void int8(int8_t v) { out += static_cast<char>(v); }
  void int16(int16_t v) { be(static_cast<uint16_t>(v), 2); }
  void int32(int32_t v) { be(static_cast<uint32_t>(v), 4); }
  void int64(int64_t v) { be(static_cast<uint64_t>(v), 8); }
  void uvarint(uint64_t v);
  void varint(int32_t v) { uvarint((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31)); }
  void varlong(int64_t v) { uvarint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void raw(std::string_view b) { out.append(b); }
  /// A string (or bytes, `wide`) with its length; nullopt writes null.
  void string(std::optional<std::string_view> s, bool compact) { sized(s, compact, false); }
  void bytes(std::optional<std::string_view> b, bool compact) { sized(b, compact, true); }
  void arrayCount(std::optional<size_t> n, bool compact);
  /// An empty tagged-field section (flexible versions end every struct with one).
  void noTags() { uvarint(0); }

private:
  void be(uint64_t v, int n);
  void sized(std::optional<std::string_view> s, bool compact, bool wide);
};

/// The bytes of an int32 length prefix followed by `body` (a request or response frame).
std::string framed(std::string_view body);

} // namespace idem::kafka
