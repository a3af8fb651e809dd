#include "proxy/resp_value.h"

#include <charconv>

namespace idem::proxy {
namespace {

constexpr size_t kMaxLine = 1 << 20;

/// Parses (out != nullptr) or only measures (out == nullptr) the value at `pos`.
Decode parseAt(std::string_view buf, size_t& pos, RespValue* out, int depth) {
  if (depth > kRespMaxDepth)
    return Decode::Invalid;
  if (pos >= buf.size())
    return Decode::NeedMoreData;
  const char type = buf[pos];
  size_t p = pos + 1;
  std::string_view line;
  if (const Decode d = readRespLine(buf, p, line, kMaxLine); d != Decode::Message)
    return d;
  if (out) {
    out->type = type;
  }
  long long n = 0;
  switch (type) {
  case '+': case '-': case ',': case '(': case '#':
    if (out)
      out->str = line;
    break;
  case ':':
    if (!parseRespInt(line, n))
      return Decode::Invalid;
    if (out) {
      out->integer = n;
      out->str = line;
    }
    break;
  case '_':
    if (!line.empty())
      return Decode::Invalid;
    if (out)
      out->null = true;
    break;
  case '$': case '!': case '=':
    if (!parseRespInt(line, n) || n < -1 || n > kRespMaxBulk || (n == -1 && type != '$'))
      return Decode::Invalid;
    if (n == -1) {
      if (out)
        out->null = true;
      break;
    }
    if (buf.size() - p < size_t(n) + 2)
      return Decode::NeedMoreData;
    if (buf.substr(p + size_t(n), 2) != "\r\n")
      return Decode::Invalid;
    if (out)
      out->str = buf.substr(p, size_t(n));
    p += size_t(n) + 2;
    break;
  case '*': case '~': case '>': case '%': case '|': {
    if (!parseRespInt(line, n) || n < -1 || n > (1LL << 32) || (n == -1 && type != '*' && type != '%'))
      return Decode::Invalid;
    if (n == -1) {
      if (out)
        out->null = true;
      break;
    }
    const long long count = (type == '%' || type == '|') ? 2 * n : n;
    for (long long i = 0; i < count; ++i) {
      if (p < buf.size() && buf[p] == '|') { // an attribute of the next element: parsed, dropped
        if (const Decode d = parseAt(buf, p, nullptr, depth + 1); d != Decode::Message)
          return d;
        --i;
        continue;
      }
      RespValue* elem = nullptr;
      if (out)
        elem = &out->elems.emplace_back();
      if (const Decode d = parseAt(buf, p, elem, depth + 1); d != Decode::Message)
        return d;
    }
    break;
  }
  default:
    return Decode::Invalid;
  }
  pos = p;
  return Decode::Message;
}

} // namespace

Decode readRespLine(std::string_view buf, size_t& pos, std::string_view& line, size_t max) {
  const size_t lf = buf.find('\n', pos);
  if (lf == std::string_view::npos)
    return buf.size() - pos > max ? Decode::Invalid : Decode::NeedMoreData;
  if (lf == pos || buf[lf - 1] != '\r' || lf - pos > max)
    return Decode::Invalid;
  line = buf.substr(pos, lf - 1 - pos);
  pos = lf + 1;
  return Decode::Message;
}

bool parseRespInt(std::string_view text, long long& value) {
  if (text.empty() || text.size() > 20)
    return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

Decode parseResp(std::string_view buf, size_t& size, RespValue* out) {
  size_t pos = 0;
  if (const Decode d = parseAt(buf, pos, nullptr, 0); d != Decode::Message)
    return d;
  size = pos;
  if (out) {
    *out = RespValue{};
    pos = 0;
    parseAt(buf, pos, out, 0);
  }
  return Decode::Message;
}

} // namespace idem::proxy
