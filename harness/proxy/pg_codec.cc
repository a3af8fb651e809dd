#include "proxy/pg_codec.h"

namespace idem::proxy {

uint32_t readBe32(std::string_view b) {
  return (uint32_t(uint8_t(b[0])) << 24) | (uint32_t(uint8_t(b[1])) << 16) |
         (uint32_t(uint8_t(b[2])) << 8) | uint32_t(uint8_t(b[3]));
}

Decode framePgTyped(std::string_view buf, std::string_view types, PgMessage& out) {
  if (buf.empty())
    return Decode::NeedMoreData;
  if (types.find(buf[0]) == std::string_view::npos)
    return Decode::Invalid;
  if (buf.size() < 5)
    return Decode::NeedMoreData;
  const uint32_t len = readBe32(buf.substr(1, 4));
  if (len < 4 || len > kPgMaxMessage)
    return Decode::Invalid;
  if (buf.size() < size_t(len) + 1)
    return Decode::NeedMoreData;
  out.type = buf[0];
  out.body = buf.substr(5, len - 4);
  out.size = size_t(len) + 1;
  return Decode::Message;
}

Decode framePgStartup(std::string_view buf, PgMessage& out) {
  if (buf.size() < 4)
    return Decode::NeedMoreData;
  const uint32_t len = readBe32(buf);
  if (len < 8 || len > kPgMaxStartup)
    return Decode::Invalid;
  if (buf.size() < len)
    return Decode::NeedMoreData;
  out.type = 0;
  out.body = buf.substr(4, len - 4);
  out.size = len;
  return Decode::Message;
}

std::string_view PgReader::cstring() {
  const size_t nul = rest_.find('\0');
  std::string_view s = rest_.substr(0, nul);
  rest_.remove_prefix(nul == std::string_view::npos ? rest_.size() : nul + 1);
  return s;
}

char PgReader::byte() {
  if (rest_.empty())
    return 0;
  const char c = rest_[0];
  rest_.remove_prefix(1);
  return c;
}

int32_t PgReader::int32() {
  if (rest_.size() < 4) {
    rest_ = {};
    return 0;
  }
  const uint32_t v = readBe32(rest_);
  rest_.remove_prefix(4);
  return static_cast<int32_t>(v);
}

std::string_view pgErrorField(std::string_view body, char code) {
  PgReader r(body);
  for (char c = r.byte(); c != 0; c = r.byte()) {
    const std::string_view value = r.cstring();
    if (c == code)
      return value;
  }
  return {};
}

} // namespace idem::proxy
