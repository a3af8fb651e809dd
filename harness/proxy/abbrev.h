#pragma once
/// Printable, bounded renderings of protocol bytes for step details and reply summaries.
#include <cstddef>
#include <string>
#include <string_view>

namespace idem::proxy {

/// The longest detail or summary a tracker reports, in bytes.
inline constexpr size_t kAbbrevMax = 200;

/// Appends `bytes` to `out` escaped: printable ASCII stays, `\` becomes `\\`, \n \r \t are written as
/// such and every other byte as \xNN. Stops before `out` would grow past `max` bytes; returns false
/// when it had to stop.
bool appendEscaped(std::string& out, std::string_view bytes, size_t max);

/// `bytes` escaped as appendEscaped() does, at most `max` bytes long; a cut text ends in "...".
std::string abbreviate(std::string_view bytes, size_t max = kAbbrevMax);

/// `word` with ASCII letters upper-cased (protocol verbs and SQL keywords), whatever the locale.
std::string upperWord(std::string_view word);

} // namespace idem::proxy
