#pragma once
/// Framing of the commands a Redis/Valkey client sends: multibulk arrays and inline lines.
#include "proxy/tracker.h"

#include <string>
#include <string_view>
#include <vector>

namespace idem::proxy {

/// The longest inline command line and multibulk header line (Redis' PROTO_INLINE_MAX_SIZE).
inline constexpr size_t kRespMaxInline = 64 * 1024;
/// How much of each argument is kept: enough for names, keywords, ids and a detail.
inline constexpr size_t kRespArgKeep = 1024;

/// Frames the command at the start of `buf`: a multibulk array of bulk strings (`*2\r\n$4\r\nECHO…`) or
/// an inline line of words (`PING\r\n`; quoted words as redis-cli writes them). On Message, `size` is
/// its length and `args` its arguments, each cut to kRespArgKeep bytes; no arguments for an empty
/// line or `*0`, which the server ignores. Invalid for what the server rejects as a protocol error.
Decode parseRespCommand(std::string_view buf, size_t& size, std::vector<std::string>& args);

} // namespace idem::proxy
