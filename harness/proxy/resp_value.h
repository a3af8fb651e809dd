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
/// as a value of type '|' (its key/value pairs in `elems`).
struct RespValue {
  char type = 0;     ///< + - : $ * _ , # ! = ( % ~ | >
  bool null = false; ///< $-1, *-1, _
  std::string str;   ///< the text of + - : $ , # ! = ( (a verbatim string keeps its "txt:" prefix)
  long long integer = 0;          ///< of :
  std::vector<RespValue> elems;   ///< of * ~ > ; of % and | keys and values alternate

  /// An array, set, push or map.
  bool aggregate() const { return type == '*' || type == '~' || type == '>' || type == '%' || type == '|'; }
  /// A string-like value: + $ = ( , : #.
  bool text() const { return !null && !aggregate() && type != '_' && type != '-' && type != '!'; }
};

/// Parses the complete value at the start of `buf`: on Message, `size` is its length and `out` (when
/// not null) the value. NeedMoreData when it is incomplete, Invalid when it cannot be RESP (unknown type
/// byte, bad length, missing CRLF, nesting deeper than kRespMaxDepth, streamed `?` lengths).
Decode parseResp(std::string_view buf, size_t& size, RespValue* out);

/// Reads the line at `pos` (up to CRLF) into `line` and moves `pos` past the CRLF; NeedMoreData when
/// no LF is there yet (Invalid when none within `max` bytes), Invalid when the LF lacks its CR.
Decode readRespLine(std::string_view buf, size_t& pos, std::string_view& line, size_t max);

/// A decimal integer (optional '-'), the whole of `text`; false when it is not one.
bool parseRespInt(std::string_view text, long long& value);

} // namespace idem::proxy
