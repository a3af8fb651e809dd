#include "proxy/resp_command.h"

#include "proxy/resp_value.h"

#include <algorithm>
#include <cctype>
#include <climits>

namespace idem::proxy {
namespace {

Decode parseMultibulk(std::string_view buf, size_t& size, std::vector<std::string_view>& args) {
  size_t pos = 1;
  std::string_view line;
  long long n = 0;
  if (const Decode d = readRespLine(buf, pos, line, kRespMaxInline); d != Decode::Message)
    return d;
  if (!parseRespInt(line, n) || n > INT_MAX)
    return Decode::Invalid;
  for (long long i = 0; i < n; ++i) {
    if (pos >= buf.size())
      return Decode::NeedMoreData;
    if (buf[pos] != '$')
      return Decode::Invalid;
    ++pos;
    long long len = 0;
    if (const Decode d = readRespLine(buf, pos, line, kRespMaxInline); d != Decode::Message)
      return d;
    if (!parseRespInt(line, len) || len < 0 || len > kRespMaxBulk)
      return Decode::Invalid;
    if (buf.size() - pos < size_t(len) + 2)
      return Decode::NeedMoreData;
    if (buf.substr(pos + size_t(len), 2) != "\r\n")
      return Decode::Invalid;
    args.push_back(buf.substr(pos, std::min(size_t(len), kRespArgKeep)));
    pos += size_t(len) + 2;
  }
  size = pos;
  return Decode::Message;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/// Splits an inline line into words like Redis' sdssplitargs; false on unbalanced quotes.
bool splitInline(std::string_view line, std::vector<std::string>& args) {
  size_t i = 0;
  while (true) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i])))
      ++i;
    if (i >= line.size())
      return true;
    std::string word;
    const char quote = (line[i] == '"' || line[i] == '\'') ? line[i++] : 0;
    bool closed = quote == 0;
    while (i < line.size()) {
      const char c = line[i];
      if (!quote && std::isspace(static_cast<unsigned char>(c)))
        break;
      ++i;
      if (quote && c == quote) {
        if (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i])))
          return false; // a closing quote must be followed by a space
        closed = true;
        break;
      }
      if (quote == '"' && c == '\\' && i < line.size()) {
        const char e = line[i++];
        if (e == 'x' && i + 1 < line.size() && hexValue(line[i]) >= 0 && hexValue(line[i + 1]) >= 0) {
          word += static_cast<char>(hexValue(line[i]) * 16 + hexValue(line[i + 1]));
          i += 2;
        } else {
          word += e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : e == 'b' ? '\b' : e == 'a' ? '\a' : e;
        }
      } else if (quote == '\'' && c == '\\' && i < line.size() && line[i] == '\'') {
        word += line[i++];
      } else {
        word += c;
      }
    }
    if (!closed)
      return false;
    args.push_back(word.substr(0, kRespArgKeep));
  }
}

} // namespace

Decode parseRespCommand(std::string_view buf, size_t& size, std::vector<std::string_view>& args,
                        std::vector<std::string>& words) {
  args.clear();
  if (buf.empty())
    return Decode::NeedMoreData;
  if (buf[0] == '*')
    return parseMultibulk(buf, size, args);
  const size_t lf = buf.find('\n');
  if (lf == std::string_view::npos)
    return buf.size() > kRespMaxInline ? Decode::Invalid : Decode::NeedMoreData;
  if (lf > kRespMaxInline)
    return Decode::Invalid;
  std::string_view line = buf.substr(0, lf);
  if (!line.empty() && line.back() == '\r')
    line.remove_suffix(1);
  words.clear();
  if (!splitInline(line, words))
    return Decode::Invalid;
  args.assign(words.begin(), words.end()); // once `words` is complete: a growing vector moves its strings
  size = lf + 1;
  return Decode::Message;
}

Decode RespCommandStream::next(std::string_view buf, size_t& size, bool& done) {
  done = false;
  if (!header_ || !inBulk_) { // "*N\r\n" first, then "$len\r\n" before each argument
    long long n = 0;
    if (const Decode d = readRespHeader(buf, header_ ? '$' : '*', size, n); d != Decode::Message)
      return d;
    if (!header_) {
      if (n < 1 || n > INT_MAX)
        return Decode::Invalid;
      header_ = true;
      argsLeft_ = n;
    } else {
      if (n < 0 || n > kRespMaxBulk)
        return Decode::Invalid;
      inBulk_ = true;
      bulkLen_ = n;
      bulkDone_ = 0;
      args_.emplace_back();
    }
    return Decode::Message;
  }
  if (buf.empty())
    return Decode::NeedMoreData;
  const long long left = bulkLen_ + 2 - bulkDone_;
  long long take = std::min<long long>(left, static_cast<long long>(buf.size()));
  const bool last = argsLeft_ == 1;
  if (last && take == left && left > 1)
    take = left - 1; // the command's last byte comes alone: the piece that ends it
  for (long long i = 0; i < take; ++i) {
    const long long at = bulkDone_ + i; // position in "<value>\r\n"
    const char c = buf[static_cast<size_t>(i)];
    if (at < bulkLen_) {
      if (args_.back().size() < kRespArgKeep)
        args_.back() += c;
    } else if ((at == bulkLen_ && c != '\r') || (at == bulkLen_ + 1 && c != '\n')) {
      return Decode::Invalid;
    }
  }
  bulkDone_ += take;
  size = static_cast<size_t>(take);
  if (bulkDone_ == bulkLen_ + 2) {
    inBulk_ = false;
    done = --argsLeft_ == 0;
  }
  return Decode::Message;
}

} // namespace idem::proxy
