#pragma once
/// RESP2 and RESP3 values (Redis serialization protocol), parsed from the bytes of a server reply.
#include "proxy/tracker.h"

#include <string>
#include <string_view>
#include <vector>

namespace idem::proxy {

/// The largest bulk string accepted (Redis' default proto-max-bulk-len).
inline constexpr long long kRespMaxBulk = 512LL << 20;
/// The deepest nesting of aggregates accepted.
inline constexpr int kRespMaxDepth = 64;

/// One value. Attributes inside aggregates are parsed and dropped; a top-level attribute is returned
/// as a value of type '|' (its key/value pairs in `elems`). Its texts are views of the bytes it was
/// parsed from (a copy of each string of every reply cost more than the rest of its decoding): it is
/// valid as long as they are.
struct RespValue {
  char type = 0;          ///< + - : $ * _ , # ! = ( % ~ | >
  bool null = false;      ///< $-1, *-1, _
  std::string_view str;   ///< the text of + - : $ , # ! = ( (a verbatim string keeps its "txt:" prefix)
  long long integer = 0;          ///< of :
  std::vector<RespValue> elems;   ///< of * ~ > ; of % and | keys and values alternate

  /// An array, set, push or map.
  bool aggregate() const { return type == '*' || type == '~' || type == '>' || type == '%' || type == '|'; }
  /// A string-like value: + $ = ( , : #.
  bool text() const { return !null && !aggregate() && type != '_' && type != '-' && type != '!'; }
};

/// Parses the complete value at the start of `buf`: on Message, `size` is its length and `out` (when
/// not null) the value, its texts views of `buf`; on anything else `out` holds what was parsed before the
/// value was found incomplete or invalid (parsed in one pass, not measured first). NeedMoreData when it is
/// incomplete, Invalid when it cannot be RESP (unknown type byte, bad length, missing CRLF, nesting deeper
/// than kRespMaxDepth, streamed `?` lengths).
Decode parseResp(std::string_view buf, size_t& size, RespValue* out);

/// Reads the line at `pos` (up to CRLF) into `line` and moves `pos` past the CRLF; NeedMoreData when
/// no LF is there yet (Invalid when none within `max` bytes), Invalid when the LF lacks its CR.
Decode readRespLine(std::string_view buf, size_t& pos, std::string_view& line, size_t max);

/// A "<type><integer>\r\n" line at the start of `buf` ("*3\r\n", "$5\r\n"): its length in `size`, the
/// integer in `n`. Invalid when `buf` starts with another byte or the integer is not one.
Decode readRespHeader(std::string_view buf, char type, size_t& size, long long& n);

/// Incremental framing of one reply value too large to hold (a 100 MB GET, a read delivering a huge
/// field), piece by piece as its bytes arrive. It keeps a skeleton of the value: its bytes with every bulk
/// string cut to kRespSkeletonKeep bytes (its length rewritten), which parseResp() reads as the value with
/// cut strings. The last piece is the value's last byte alone, so that everything before it may be
/// forwarded at once: a client can't act on a reply it has not all of.
class RespReplyStream {
public:
  /// The next piece at the start of `buf`: on Message, `size` bytes of it; `done` when they end the
  /// value (skeleton() is then complete). NeedMoreData: a line is not all there; Invalid: not RESP, or a
  /// skeleton past kRespSkeletonMax (so many elements that even their outline is too large to keep).
  Decode next(std::string_view buf, size_t& size, bool& done);
  const std::string& skeleton() const { return skeleton_; }

private:
  struct Frame {
    long long left = 0;     ///< elements still to come
    bool attribute = false; ///< an attribute: it precedes an element, and is none itself
  };
  /// One element ended: counts it off the frames it completes.
  void elementDone(bool attribute);
  /// Whether the element starting now is the value's last (every open frame waits for its last element).
  bool lastElement() const;

  std::vector<Frame> stack_;
  bool inBulk_ = false;
  long long bulkLen_ = 0, bulkDone_ = 0; ///< of the bulk string being read (its bytes and CRLF)
  bool bulkIsLast_ = false;              ///< that bulk ends the value
  size_t finalLeft_ = 0;                 ///< a token's last byte, still to come alone
  bool ended_ = false;                   ///< the value is complete once finalLeft_ is taken
  std::string skeleton_;
};

/// Bulk strings keep this many bytes in a skeleton; a skeleton holds at most kRespSkeletonMax bytes.
inline constexpr size_t kRespSkeletonKeep = 1024;
inline constexpr size_t kRespSkeletonMax = 16 << 20;

/// A decimal integer (optional '-'), the whole of `text`; false when it is not one.
bool parseRespInt(std::string_view text, long long& value);

} // namespace idem::proxy
