#include "brokers/kafka/wire.h"

namespace idem::kafka {

int8_t Reader::int8() { return static_cast<int8_t>(take(1).empty() ? 0 : bytes_[pos_ - 1]); }

int16_t Reader::int16() {
  const std::string_view b = take(2);
  return b.empty() ? 0 : static_cast<int16_t>((uint8_t(b[0]) << 8) | uint8_t(b[1]));
}

int32_t Reader::int32() {
  const std::string_view b = take(4);
  uint32_t v = 0;
  for (char c : b)
    v = (v << 8) | uint8_t(c);
  return static_cast<int32_t>(v);
}

int64_t Reader::int64() {
  const std::string_view b = take(8);
  uint64_t v = 0;
  for (char c : b)
    v = (v << 8) | uint8_t(c);
  return static_cast<int64_t>(v);
}

uint64_t Reader::unsignedVarint(int maxBytes) {
  uint64_t v = 0;
  for (int i = 0; i < maxBytes; ++i) {
    if (pos_ >= bytes_.size()) {
      fail();
      return 0;
    }
    const uint8_t b = uint8_t(bytes_[pos_++]);
    v |= uint64_t(b & 0x7f) << (7 * i);
    if (!(b & 0x80))
      return v;
  }
  fail(); // longer than the type allows
  return 0;
}

uint32_t Reader::uvarint() {
  const uint64_t v = unsignedVarint(5);
  if (v > UINT32_MAX)
    fail();
  return failed_ ? 0 : static_cast<uint32_t>(v);
}

int32_t Reader::varint() {
  const uint32_t v = uvarint();
  return static_cast<int32_t>((v >> 1) ^ (~(v & 1) + 1));
}

int64_t Reader::varlong() {
  const uint64_t v = unsignedVarint(10);
  return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
}

std::string_view Reader::take(size_t n) {
  if (failed_ || n > left()) {
    fail();
    return {};
  }
  const std::string_view b = bytes_.substr(pos_, n);
  pos_ += n;
  return b;
}

std::optional<size_t> Reader::length(bool compact, bool wide) {
  int64_t n;
  if (compact)
    n = int64_t(uvarint()) - 1;
  else
    n = wide ? int32() : int16();
  if (failed_ || n < -1) {
    fail();
    return std::nullopt;
  }
  if (n == -1)
    return std::nullopt;
  return static_cast<size_t>(n);
}

std::optional<std::string_view> Reader::bytesOf(std::optional<size_t> n) {
  if (!n)
    return std::nullopt;
  const std::string_view b = take(*n);
  if (failed_)
    return std::nullopt;
  return b;
}

std::optional<size_t> Reader::arrayCount(bool compact) {
  const std::optional<size_t> n = length(compact, true);
  // Every element takes at least one byte: a count beyond what is left is malformed, not a reason to loop.
  if (n && *n > left())
    fail();
  return failed_ ? std::nullopt : n;
}

void Reader::skipTags() {
  const uint32_t n = uvarint();
  for (uint32_t i = 0; i < n && !failed_; ++i) {
    uvarint();
    take(uvarint());
  }
}

void Writer::uvarint(uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

void Writer::be(uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i)
    out += static_cast<char>((v >> (8 * i)) & 0xff);
}

void Writer::sized(std::optional<std::string_view> s, bool compact, bool wide) {
  if (compact)
    uvarint(s ? s->size() + 1 : 0);
  else if (wide)
    int32(s ? static_cast<int32_t>(s->size()) : -1);
  else
    int16(s ? static_cast<int16_t>(s->size()) : -1);
  if (s)
    out.append(*s);
}

void Writer::arrayCount(std::optional<size_t> n, bool compact) {
  if (compact)
    uvarint(n ? *n + 1 : 0);
  else
    int32(n ? static_cast<int32_t>(*n) : -1);
}

std::string framed(std::string_view body) {
  Writer w;
  w.int32(static_cast<int32_t>(body.size()));
  w.raw(body);
  return w.out;
}

} // namespace idem::kafka
