#include "proxy/abbrev.h"

#include <algorithm>

namespace idem::proxy {

bool appendEscaped(std::string& out, std::string_view bytes, size_t max) {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto plain = [](unsigned char c) { return c >= 0x20 && c < 0x7f && c != '\\'; };
  size_t i = 0;
  while (i < bytes.size()) {
    // A run of printable bytes goes in one append (most of any SQL text or command line).
    size_t j = i;
    while (j < bytes.size() && plain(static_cast<unsigned char>(bytes[j])))
      ++j;
    if (j > i) {
      const size_t room = out.size() < max ? max - out.size() : 0;
      if (j - i > room) {
        out.append(bytes.data() + i, room);
        return false;
      }
      out.append(bytes.data() + i, j - i);
      i = j;
      if (i == bytes.size())
        break;
    }
    const auto c = static_cast<unsigned char>(bytes[i++]);
    char buf[4];
    size_t n = 2;
    buf[0] = '\\';
    if (c == '\\') {
      buf[1] = '\\';
    } else if (c == '\n') {
      buf[1] = 'n';
    } else if (c == '\r') {
      buf[1] = 'r';
    } else if (c == '\t') {
      buf[1] = 't';
    } else {
      buf[1] = 'x';
      buf[2] = kHex[c >> 4];
      buf[3] = kHex[c & 0xf];
      n = 4;
    }
    if (out.size() + n > max)
      return false;
    out.append(buf, n);
  }
  return true;
}

std::string abbreviate(std::string_view bytes, size_t max) {
  std::string out;
  out.reserve(std::min(bytes.size(), max)); // one allocation, not one per doubling
  if (appendEscaped(out, bytes, max))
    return out;
  out.clear();
  appendEscaped(out, bytes, max < 3 ? 0 : max - 3);
  out += "...";
  return out;
}

std::string upperWord(std::string_view word) {
  std::string out(word);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

} // namespace idem::proxy
