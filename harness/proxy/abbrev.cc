#include "proxy/abbrev.h"

namespace idem::proxy {

bool appendEscaped(std::string& out, std::string_view bytes, size_t max) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned char c : bytes) {
    char buf[4];
    size_t n = 2;
    buf[0] = '\\';
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      buf[0] = static_cast<char>(c);
      n = 1;
    } else if (c == '\\') {
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
  if (appendEscaped(out, bytes, max))
    return out;
  out.clear();
  appendEscaped(out, bytes, max < 3 ? 0 : max - 3);
  out += "...";
  return out;
}

} // namespace idem::proxy
