#pragma once
/// Framing and field reading of PostgreSQL v3 protocol messages (no protocol state).
#include "proxy/tracker.h"

#include <cstdint>
#include <string_view>

namespace idem::proxy {

/// The largest message length the trackers accept (the server's own limit is 1 GiB).
inline constexpr uint32_t kPgMaxMessage = 1u << 30;
/// A client message (Query, Parse, Bind, CopyData) at least this large, not complete yet, is framed in
/// pieces as its bytes arrive instead of being held whole; its first kPgKeep bytes describe it.
inline constexpr size_t kPgStreamAbove = 1 << 20;
inline constexpr size_t kPgKeep = 64 * 1024;
/// The largest startup-phase packet (the server's MAX_STARTUP_PACKET_LENGTH).
inline constexpr uint32_t kPgMaxStartup = 10000;

/// One framed message: `type` is '\0' for the untyped packets of the startup phase, whose body starts
/// with the int32 request code.
/// The request codes of the startup packets that are not a StartupMessage.
inline constexpr uint32_t kPgCancelRequestCode = 80877102;
inline constexpr uint32_t kPgSslRequestCode = 80877103;
inline constexpr uint32_t kPgGssEncRequestCode = 80877104;

/// A big-endian 32-bit integer from the first 4 bytes of `b`.
uint32_t readBe32(std::string_view b);

struct PgMessage {
  char type = 0;
  std::string_view body; ///< after the type byte and the length
  size_t size = 0;       ///< of the whole message
};

/// Frames the typed message at the start of `buf`. Invalid when the type byte is not in `types` or the
/// length is < 4 or > kPgMaxMessage; NeedMoreData until all of it is there.
Decode framePgTyped(std::string_view buf, std::string_view types, PgMessage& out);

/// Frames the untyped startup-phase packet at the start of `buf` (length < 8 or > kPgMaxStartup:
/// Invalid).
Decode framePgStartup(std::string_view buf, PgMessage& out);

/// Reads the fields of a message body in order. Reading past the end yields empty values.
class PgReader {
public:
  /// Reads `body` from its start.
  explicit PgReader(std::string_view body) : rest_(body) {}
  /// The next NUL-terminated string (without the NUL; the rest of the body when there is no NUL).
  std::string_view cstring();
  /// The next byte, '\0' at the end.
  char byte();
  /// The next big-endian int32, 0 when fewer than 4 bytes are left.
  int32_t int32();

private:
  std::string_view rest_;
};

/// The field with code `code` ('M' message, 'C' SQLSTATE, 'S' severity …) of an ErrorResponse or
/// NoticeResponse body; empty when absent.
std::string_view pgErrorField(std::string_view body, char code);

} // namespace idem::proxy
