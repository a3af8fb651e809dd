#pragma once
// A test case that cannot run here (not root, no such account) must not pass: it says why and exits 77,
// which ctest reports as skipped (SKIP_RETURN_CODE in tests/CMakeLists.txt). Every test case is its own
// ctest entry, so the exit skips exactly this one.
#include <cstdio>
#include <cstdlib>
#include <string>

namespace idem::testing {

[[noreturn]] inline void skipTest(const std::string& why) {
  std::fprintf(stderr, "SKIPPED: %s\n", why.c_str());
  std::fflush(nullptr);
  std::_Exit(77);
}

} // namespace idem::testing
