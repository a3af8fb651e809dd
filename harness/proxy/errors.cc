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

const char* reason(int status) {
  switch (status) {
  case 500: return "Internal Server Error";
  case 501: return "Not Implemented";
  case 502: return "Bad Gateway";
  case 503: return "Service Unavailable";
  case 504: return "Gateway Timeout";
  default: return "Server Error";
  }
}

} // namespace

std::string httpErrorAnswer(const std::string& code, const std::string& text) {
  int status = 0;
  for (char c : code) status = c >= '0' && c <= '9' && status < 1000 ? status * 10 + (c - '0') : 1000;
  if (status < 100 || status > 599) status = 503;
  std::string json;
  for (char c : text) {
    if (c == '"' || c == '\\') json += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) json += c;
  }
  const std::string body = "{\"error\":\"" + json + " (injected by idemproof)\"}";
  return "HTTP/1.1 " + std::to_string(status) + " " + reason(status) +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string errorReply(Server server, const std::string& code, const std::string& text, char txStatus, bool fatal) {
  std::string out;
  if (server == Server::Sink) return httpErrorAnswer(code, text);
  if (server == Server::Valkey) {
    out.append("-").append(oneLine(code));
    if (!text.empty()) out.append(" ").append(oneLine(text));
    return out.append("\r\n");
  }
  std::string body;
  const char* severity = fatal ? "FATAL" : "ERROR";
  body.append(field('S', severity)).append(field('V', severity)).append(field('C', code)).append(field('M', text));
  body.push_back('\0');
  out.append(message('E', body));
  if (!fatal) out.append(message('Z', std::string(1, txStatus)));
  return out;
}

std::string pgRaiseQuery(const std::string& code, const std::string& text) {
  // A PL/pgSQL string literal inside the dollar-quoted body: single quotes doubled.
  std::string msg;
  for (char c : text) msg += c == '\'' ? std::string("''") : std::string(1, c);
  std::string sql = "DO $idemproof$ BEGIN RAISE EXCEPTION USING ERRCODE = '" + code + "', MESSAGE = '" + msg +
                    " (injected by idemproof)'; END $idemproof$";
  return pgQuery(sql);
}

std::string pgQuery(const std::string& sql) {
  std::string body = sql;
  body.push_back('\0');
  return message('Q', body);
}

std::string respCommand(const std::vector<std::string>& words) {
  std::string out = "*" + std::to_string(words.size()) + "\r\n";
  for (const auto& w : words)
    out += "$" + std::to_string(w.size()) + "\r\n" + w + "\r\n";
  return out;
}

} // namespace idem::proxy
