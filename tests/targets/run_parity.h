#pragma once
// For test consumers that behave one way in every other run of idemproof's: whether this run's number, the
// part of IDEMPROOF_RUN after its '/', is odd. IDEMPROOF_RUN is a mark the contract says to leave alone; it
// is read here only to make a pattern repeatable.
#include <cstdlib>
#include <string>

namespace idem::targets {

inline bool oddRun() {
  const char* run = std::getenv("IDEMPROOF_RUN");
  std::string s = run ? run : "";
  const auto slash = s.rfind('/');
  return slash != std::string::npos && slash + 1 < s.size() && (s.back() - '0') % 2 == 1;
}

} // namespace idem::targets
