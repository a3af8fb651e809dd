#pragma once
/// Builders of PostgreSQL protocol messages for the tracker tests.
#include <cstdint>
#include <string>
#include <string_view>

namespace idem::proxy::test::pg {

/// A big-endian int32.
inline std::string i32(uint32_t v) {
  return {char(v >> 24), char((v >> 16) & 0xff), char((v >> 8) & 0xff), char(v & 0xff)};
}
/// A NUL-terminated string.
inline std::string cstr(std::string_view s) { return std::string(s) + '\0'; }
/// A typed message: type byte, length, body.
inline std::string msg(char type, std::string_view body) {
  return type + i32(uint32_t(body.size() + 4)) + std::string(body);
}
/// An untyped startup-phase packet with request code `code`.
inline std::string startupPacket(uint32_t code, std::string_view rest = {}) {
  return i32(uint32_t(rest.size() + 8)) + i32(code) + std::string(rest);
}
inline std::string startup() { return startupPacket(196608, cstr("user") + cstr("postgres") + '\0'); }
inline std::string query(std::string_view sql) { return msg('Q', cstr(sql)); }
inline std::string parse(std::string_view name, std::string_view sql) {
  return msg('P', cstr(name) + cstr(sql) + std::string(2, '\0'));
}
inline std::string bind(std::string_view portal, std::string_view stmt) {
  return msg('B', cstr(portal) + cstr(stmt) + std::string(6, '\0'));
}
inline std::string describeMessage(char what, std::string_view name) { return msg('D', what + cstr(name)); }
inline std::string execute(std::string_view portal) { return msg('E', cstr(portal) + i32(0)); }
inline std::string closeMessage(char what, std::string_view name) { return msg('C', what + cstr(name)); }
inline std::string syncMessage() { return msg('S', ""); }
inline std::string flushMessage() { return msg('H', ""); }

// Backend messages.
inline std::string ready(char status = 'I') { return msg('Z', std::string(1, status)); }
inline std::string complete(std::string_view tag) { return msg('C', cstr(tag)); }
inline std::string errorResponse(std::string_view message) {
  return msg('E', "SERROR" + std::string(1, '\0') + "C22012" + '\0' + 'M' + cstr(message) + '\0');
}
inline std::string authOk() { return msg('R', i32(0)); }
/// What a server sends after a StartupMessage under trust authentication.
inline std::string serverHello() {
  return authOk() + msg('S', cstr("server_version") + cstr("15")) + msg('K', i32(1) + i32(2)) + ready();
}

} // namespace idem::proxy::test::pg
