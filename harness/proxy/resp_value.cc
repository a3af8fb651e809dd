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
  if (out)
    *out = RespValue{};
  size_t pos = 0;
  const Decode d = parseAt(buf, pos, out, 0);
  if (d == Decode::Message)
    size = pos;
  return d;
}

Decode readRespHeader(std::string_view buf, char type, size_t& size, long long& n) {
  if (buf.empty())
    return Decode::NeedMoreData;
  if (buf[0] != type)
    return Decode::Invalid;
  size_t pos = 1;
  std::string_view line;
  if (const Decode d = readRespLine(buf, pos, line, 64 * 1024); d != Decode::Message)
    return d;
  if (!parseRespInt(line, n))
    return Decode::Invalid;
  size = pos;
  return Decode::Message;
}

void RespReplyStream::elementDone(bool attribute) {
  if (attribute) // an attribute is no element of what holds it
    return;
  while (!stack_.empty()) {
    Frame& f = stack_.back();
    if (--f.left > 0)
      return;
    const bool wasAttribute = f.attribute;
    stack_.pop_back();
    if (wasAttribute)
      return;
  }
  ended_ = true; // the outermost value is complete
}

bool RespReplyStream::lastElement() const {
  for (const Frame& f : stack_)
    if (f.left != 1 || f.attribute)
      return false;
  return true;
}

Decode RespReplyStream::next(std::string_view buf, size_t& size, bool& done) {
  done = false;
  if (buf.empty())
    return Decode::NeedMoreData;
  if (finalLeft_ > 0) { // the value's last byte
    size = 1;
    finalLeft_ = 0;
    done = true;
    return Decode::Message;
  }
  if (inBulk_) {
    const long long left = bulkLen_ + 2 - bulkDone_;
    long long take = std::min<long long>(left, static_cast<long long>(buf.size()));
    if (bulkIsLast_ && take == left && left > 1)
      take = left - 1; // the last byte comes alone
    for (long long i = 0; i < take; ++i) {
      const long long at = bulkDone_ + i;
      const char c = buf[static_cast<size_t>(i)];
      if (at < bulkLen_) {
        if (at < static_cast<long long>(kRespSkeletonKeep))
          skeleton_ += c;
      } else if ((at == bulkLen_ && c != '\r') || (at == bulkLen_ + 1 && c != '\n')) {
        return Decode::Invalid;
      }
    }
    bulkDone_ += take;
    size = static_cast<size_t>(take);
    if (bulkDone_ == bulkLen_ + 1 && bulkIsLast_) { // all but its last byte
      skeleton_ += "\r\n";
      inBulk_ = false;
      finalLeft_ = 1;
    } else if (bulkDone_ == bulkLen_ + 2) {
      skeleton_ += "\r\n";
      inBulk_ = false;
      elementDone(false);
      if (ended_) // an empty final bulk: "\r\n" came in one piece of 2 bytes, nothing left
        done = true;
    }
    return Decode::Message;
  }
  // A token: a type byte and its line.
  size_t pos = 1;
  std::string_view line;
  if (const Decode d = readRespLine(buf, pos, line, 64 * 1024); d != Decode::Message)
    return d;
  const char type = buf[0];
  const bool last = lastElement();
  long long n = 0;
  bool complete = true; // the element ends with this token
  switch (type) {
  case '_':
    if (!line.empty())
      return Decode::Invalid;
    skeleton_.append(buf.substr(0, pos));
    break;
  case '+': case '-': case ',': case '(': case '#':
    skeleton_.append(buf.substr(0, pos));
    break;
  case ':':
    if (!parseRespInt(line, n))
      return Decode::Invalid;
    skeleton_.append(buf.substr(0, pos));
    break;
  case '$': case '!': case '=':
    if (!parseRespInt(line, n) || n < -1 || n > kRespMaxBulk || (n == -1 && type != '$'))
      return Decode::Invalid;
    if (n == -1) {
      skeleton_.append(buf.substr(0, pos));
      break;
    }
    skeleton_ += type + std::to_string(std::min<long long>(n, static_cast<long long>(kRespSkeletonKeep))) + "\r\n";
    inBulk_ = true;
    bulkLen_ = n;
    bulkDone_ = 0;
    bulkIsLast_ = last;
    complete = false;
    break;
  case '*': case '~': case '%': case '|': {
    if (!parseRespInt(line, n) || n < -1 || n > (1LL << 32) || (n == -1 && type != '*' && type != '%'))
      return Decode::Invalid;
    if (type == '|' && stack_.empty())
      return Decode::Invalid; // a top-level attribute is a reply of its own (the tracker frames none)
    skeleton_.append(buf.substr(0, pos));
    const long long count = (type == '%' || type == '|') ? 2 * n : n;
    if (n == -1 || count == 0)
      break;
    if (stack_.size() >= static_cast<size_t>(kRespMaxDepth))
      return Decode::Invalid;
    stack_.push_back(Frame{count, type == '|'});
    complete = false;
    break;
  }
  default:
    return Decode::Invalid;
  }
  if (skeleton_.size() > kRespSkeletonMax)
    return Decode::Invalid;
  size = pos;
  if (complete) {
    elementDone(type == '|'); // (an empty attribute)
    if (ended_) {
      if (pos > 1) { // hold its last byte back: it comes alone
        size = pos - 1;
        finalLeft_ = 1;
      } else {
        done = true;
      }
    }
  }
  return Decode::Message;
}

} // namespace idem::proxy
