#pragma once
/// What idemproof prints carries data it did not write: target and scenario names, a consumer's error
/// messages, the fields of a shard's report.json read by merge. A control character in them would drive
/// the user's terminal (an ESC sequence can set the window title, clear the screen, or rewrite a line
/// already printed). Every byte idemproof prints on stdout and stderr therefore passes through
/// escapeControls(): escapeStandardStreams() installs it under std::cout and std::cerr, and the few
/// writes that bypass the streams (the progress line, the signal thread's last words) call it themselves.
#include <string>
#include <string_view>

namespace idem {

/// `text` with every control character but newline and tab written as a visible escape: C0 controls
/// and DEL as \xHH (ESC -> \x1b, CR -> \r), the C1 controls U+0080..U+009F (UTF-8 C2 80..C2 9F) as \u0080..
/// Everything else, UTF-8 included, is kept as is.
std::string escapeControls(std::string_view text);

/// Puts a filter under std::cout and std::cerr that passes everything they print through
/// escapeControls() (a C1 control split over two writes included). Call once, first thing in main.
void escapeStandardStreams();

} // namespace idem
