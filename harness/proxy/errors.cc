#include "proxy/errors.h"

#include <cstdint>

namespace idem::proxy {

namespace {

void int32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xff);
}

std::string message(char type, const std::string& body) {
  std::string m(1, type);
  int32(m, static_cast<uint32_t>(body.size() + 4));
  return m + body;
}

std::string field(char code, const std::string& value) { return std::string(1, code) + value + '\0'; }

/// RESP simple strings can't hold CR or LF.
std::string oneLine(std::string s) {
  for (char& c : s)
    if (c == '\r' || c == '\n') c = ' ';
  return s;
}

} // namespace

std::string errorReply(Server server, const std::string& code, const std::string& text, char txStatus) {
  std::string out;
  if (server == Server::Valkey) {
    out.append("-").append(oneLine(code));
    if (!text.empty()) out.append(" ").append(oneLine(text));
    return out.append("\r\n");
  }
  std::string body;
  body.append(field('S', "ERROR")).append(field('V', "ERROR")).append(field('C', code)).append(field('M', text));
  body.push_back('\0');
  out.append(message('E', body)).append(message('Z', std::string(1, txStatus)));
  return out;
}

} // namespace idem::proxy
