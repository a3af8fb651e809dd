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
/// The arguments are views, not copies (a copy of each argument of every command cost more than its
/// framing): of `buf` for a multibulk array, of `words` (the unquoted words, overwritten) for an inline
/// line; valid as long as those are and `words` is left alone.
Decode parseRespCommand(std::string_view buf, size_t& size, std::vector<std::string_view>& args,
                        std::vector<std::string>& words);

/// A multibulk command at least this large, not complete yet, is framed in pieces (RespCommandStream)
/// instead of being held whole: a 100 MB SET costs the proxy no more than this.
inline constexpr size_t kRespStreamAbove = 1 << 20;

/// Incremental framing of one multibulk command, piece by piece as its bytes arrive, keeping only
/// kRespArgKeep bytes of each argument. The last piece is the command's last byte alone, so that
/// everything before it may be forwarded at once: a server can't act on a command it has not all of.
class RespCommandStream {
public:
  /// The next piece at the start of `buf`: on Message, `size` bytes of it; `done` when they end the
  /// command (args() is then complete). NeedMoreData: a header is not all there; Invalid: not RESP.
  Decode next(std::string_view buf, size_t& size, bool& done);
  const std::vector<std::string>& args() const { return args_; }

private:
  bool header_ = false;     ///< "*N\r\n" read
  long long argsLeft_ = 0;  ///< arguments not wholly read
  bool inBulk_ = false;     ///< inside an argument's "$len\r\n<len bytes>\r\n"
  long long bulkLen_ = 0;   ///< its length
  long long bulkDone_ = 0;  ///< bytes of it (value and CRLF) read
  std::vector<std::string> args_;
};

} // namespace idem::proxy
