// What idemproof prints from data never drives the terminal: control characters are escaped, by escapeControls()
// and by the filter under std::cout and std::cerr (core/terminal.h).
#include "core/terminal.h"

#include <catch2/catch.hpp>

#include <iostream>
#include <sstream>

using idem::escapeControls;

TEST_CASE("escapeControls: C0, DEL and C1 controls become visible escapes while lines, tabs and UTF-8 stay") {
  CHECK(escapeControls("plain text\twith a tab\n") == "plain text\twith a tab\n");
  CHECK(escapeControls("\x1b]0;pwned\x07") == "\\x1b]0;pwned\\x07");   // set the window title
  CHECK(escapeControls("\x1b[2J\x1b[H") == "\\x1b[2J\\x1b[H");          // clear the screen
  CHECK(escapeControls("ok\rFAKE") == "ok\\rFAKE");                     // rewrite a line already printed
  CHECK(escapeControls(std::string("a\0b", 3)) == "a\\x00b");
  CHECK(escapeControls("\x7f") == "\\x7f");
  CHECK(escapeControls("\xc2\x9b" "31m") == "\\u009b31m");              // CSI as a UTF-8 C1 control
  CHECK(escapeControls("caf\xc3\xa9 \xc2\xa0 \xe2\x86\x92") == "caf\xc3\xa9 \xc2\xa0 \xe2\x86\x92");
}

TEST_CASE("the filter under std::cout escapes what passes through it, a C1 control split over two writes too") {
  std::stringstream out;
  std::streambuf* old = std::cout.rdbuf(out.rdbuf());
  idem::escapeStandardStreams();
  std::cout << "target '" << "evil\x1b]0;t\x07" << "'\n";
  std::cout << "\xc2";
  std::cout << "\x9b" << "0m and \xc2" << "\xa9\n" << std::flush;
  std::streambuf* filter = std::cout.rdbuf();
  std::cout.rdbuf(old);
  CHECK(out.str() == "target 'evil\\x1b]0;t\\x07'\n\\u009b0m and \xc2\xa9\n");
  CHECK(filter != out.rdbuf()); // it was the filter that printed
}
